"""Write-behind ingestion: a bounded queue drained in batches, retried on failure, drained on shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential_jitter

from bot.memory.types import IngestOp
from db.messages import batch_writer_for

log = logging.getLogger(__name__)

_FLUSH = object()
_STOP = object()


@dataclass
class IngestStats:
    """Counters for /memory stats and benchmarks."""

    accepted: int = 0
    written: int = 0
    batches: int = 0
    failed_attempts: int = 0
    spilled: int = 0


class WriteBehindQueue:
    """Accepts operations without touching the database; a single worker writes them in batches."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        batch_rows: int = 1000,
        flush_ms: int = 500,
        max_queue: int = 20000,
        shutdown_retry_seconds: float = 30.0,
        spill_dir: Path | None = None,
    ) -> None:
        self._writer = batch_writer_for(engine)
        self._batch_rows = batch_rows
        self._flush_seconds = flush_ms / 1000
        self._queue: asyncio.Queue[object] = asyncio.Queue(maxsize=max_queue)
        self._shutdown_retry_seconds = shutdown_retry_seconds
        self._spill_dir = spill_dir
        self._closing = False
        self._closed = False
        self._worker: asyncio.Task[None] | None = None
        self.stats = IngestStats()

    @property
    def pending(self) -> int:
        """Operations accepted but not yet committed (approximate, includes markers)."""
        return self._queue.qsize()

    def start(self) -> None:
        """Start the worker task; idempotent."""
        if self._worker is None:
            self._worker = asyncio.create_task(self._run(), name="elefant-ingest")

    async def put(self, op: IngestOp) -> None:
        """Accept one operation; waits only when the queue is full (back-pressure, never a drop)."""
        if self._closing:
            raise RuntimeError("ingestion is closed")
        self.start()
        await self._queue.put(op)
        self.stats.accepted += 1

    async def flush(self) -> None:
        """Return once everything accepted before this call is committed."""
        if self._worker is None:
            return
        await self._queue.put(_FLUSH)
        await self._queue.join()

    async def close(self) -> None:
        """Stop accepting, drain what was accepted, and stop the worker."""
        if self._closed:
            return
        self._closing = True
        if self._worker is not None:
            await self._queue.put(_STOP)
            await self._worker
        await self._writer.close()
        self._closed = True

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        in_flight: asyncio.Task[None] | None = None
        stop = False
        while not stop:
            batch: list[IngestOp] = []
            markers = 0
            item = await self._queue.get()
            deadline = loop.time() + self._flush_seconds
            while True:
                if item is _FLUSH or item is _STOP:
                    stop = item is _STOP
                    markers += 1
                    break
                batch.append(item)  # type: ignore[arg-type]
                if len(batch) >= self._batch_rows:
                    break
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        item = await asyncio.wait_for(self._queue.get(), remaining)
                    except TimeoutError:
                        break
            # Gather the next batch while this one is being written; batches still commit in order.
            if in_flight is not None:
                await in_flight
            in_flight = asyncio.create_task(self._write(batch, markers))
        if in_flight is not None:
            await in_flight

    async def _write(self, batch: list[IngestOp], markers: int) -> None:
        if batch:
            await self._commit(batch)
        for _ in range(len(batch) + markers):
            self._queue.task_done()

    async def _commit(self, batch: list[IngestOp]) -> None:
        started = time.monotonic()

        def give_up(state: RetryCallState) -> bool:
            # While running we retry forever (the queue applies back-pressure); at shutdown we try for a
            # bounded time and then spill to a file rather than lose anything.
            return self._closing and time.monotonic() - started > self._shutdown_retry_seconds

        def report(state: RetryCallState) -> None:
            self.stats.failed_attempts += 1
            exc = state.outcome.exception() if state.outcome else None
            log.error(
                "writing %d ingested operations failed (attempt %d), retrying: %r",
                len(batch), state.attempt_number, exc,
            )

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(Exception),
            wait=wait_exponential_jitter(initial=0.05, max=5.0),
            stop=give_up,
            before_sleep=report,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    await self._writer.write(batch)
        except Exception:
            log.exception("database unavailable at shutdown; spilling %d operations", len(batch))
            self._spill(batch)
            return
        self.stats.written += len(batch)
        self.stats.batches += 1

    def _spill(self, batch: list[IngestOp]) -> None:
        directory = self._spill_dir or Path("data")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"ingest-spill-{int(time.time())}.jsonl"
        with path.open("a", encoding="utf-8") as spill:
            for op in batch:
                record = {"kind": type(op).__name__, **asdict(op)}
                spill.write(json.dumps(record, default=_json_default) + "\n")
        self.stats.spilled += len(batch)
        log.critical("%d operations could not be stored and were saved to %s", len(batch), path)


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__}")
