"""Write-behind ingestion: a bounded queue drained in batches, retried on failure, drained on shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from bot.memory.types import IngestOp
from db.messages import DeadLetter, Touched, batch_writer_for, is_refusal

log = logging.getLogger(__name__)


@dataclass
class IngestStats:
    """Counters for /memory stats and benchmarks."""

    accepted: int = 0
    written: int = 0
    batches: int = 0
    failed_attempts: int = 0
    spilled: int = 0
    dead_letters: int = 0


class WriteBehindQueue:
    """Accepts operations without touching the database; a single worker writes them in batches.

    A deque with a low-water mark instead of asyncio.Queue: a producer blocked on a full queue is woken
    once per freed half-queue, not once per item, which keeps the event loop quiet while the writer
    thread works (+~15 % throughput in bench/ingest.py).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        batch_rows: int = 1000,
        flush_ms: int = 500,
        max_queue: int = 20000,
        shutdown_retry_seconds: float = 30.0,
        spill_dir: Path | None = None,
        on_written: Callable[[list[Touched]], Awaitable[None]] | None = None,
    ) -> None:
        self._writer = batch_writer_for(engine)
        self._on_written = on_written  # told what edits and deletes changed, after they are committed
        self._batch_rows = batch_rows
        self._flush_seconds = flush_ms / 1000
        self._max_queue = max_queue
        self._low_water = max_queue // 2
        self._items: deque[IngestOp | DeadLetter | asyncio.Future[None]] = deque()
        self._markers = 0
        self._space = asyncio.Event()
        self._space.set()
        self._arrived = asyncio.Event()
        self._shutdown_retry_seconds = shutdown_retry_seconds
        self._spill_dir = spill_dir
        self._closing = False
        self._closed = False
        self._worker: asyncio.Task[None] | None = None
        self.stats = IngestStats()

    @property
    def pending(self) -> int:
        """Operations accepted but not yet handed to the writer."""
        return len(self._items) - self._markers

    def start(self) -> None:
        """Start the worker task; idempotent."""
        if self._worker is None:
            self._worker = asyncio.create_task(self._run(), name="elefant-ingest")

    def offer(self, op: IngestOp | DeadLetter) -> bool:
        """Accept `op` if there is room, without awaiting; False when the caller must `put` (and wait)."""
        if self._closing:
            raise RuntimeError("ingestion is closed")
        if len(self._items) >= self._max_queue:
            return False
        if self._worker is None:
            self.start()
        if isinstance(op, DeadLetter):  # refused before the queue (an impossible id): counted like the rest
            self._count_dead_letter(op.reason)
        self._items.append(op)
        self.stats.accepted += 1
        self._arrived.set()
        return True

    async def put(self, op: IngestOp | DeadLetter) -> None:
        """Accept one operation; waits only when the queue is full (back-pressure, never a drop)."""
        while not self.offer(op):
            self._space.clear()
            await self._space.wait()

    async def flush(self) -> None:
        """Return once everything accepted before this call is committed (later arrivals don't delay it)."""
        if self._worker is None:
            return
        marker: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._items.append(marker)
        self._markers += 1
        self._arrived.set()
        await marker

    async def close(self) -> None:
        """Stop accepting, drain what was accepted, and stop the worker."""
        if self._closed:
            return
        self._closing = True
        if self._worker is not None:
            self._arrived.set()
            await self._worker
        await self._writer.close()
        self._closed = True

    async def _run(self) -> None:
        in_flight: asyncio.Task[None] | None = None
        while True:
            if not self._items:
                if self._closing:
                    break
                self._arrived.clear()
                await self._arrived.wait()
                continue
            await self._gather()
            batch, markers = self._take()
            # The next batch is gathered while this one is written; batches still commit in order.
            if in_flight is not None:
                await in_flight
            in_flight = asyncio.create_task(self._write(batch, markers))
        if in_flight is not None:
            await in_flight

    async def _gather(self) -> None:
        """Wait until a batch is full, the flush window closes, or someone flushes or closes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._flush_seconds
        while len(self._items) < self._batch_rows and not self._markers and not self._closing:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                return

    def _take(self) -> tuple[list[IngestOp | DeadLetter], list[asyncio.Future[None]]]:
        batch: list[IngestOp | DeadLetter] = []
        markers: list[asyncio.Future[None]] = []
        items = self._items
        while items and len(batch) < self._batch_rows:
            if isinstance(items[0], asyncio.Future):
                while items and isinstance(items[0], asyncio.Future):
                    markers.append(items.popleft())  # type: ignore[arg-type]
                break
            batch.append(items.popleft())  # type: ignore[arg-type]
        self._markers -= len(markers)
        if len(items) <= self._low_water:
            self._space.set()
        return batch, markers

    async def _write(self, batch: list[IngestOp | DeadLetter], markers: list[asyncio.Future[None]]) -> None:
        if batch:
            await self._commit(batch)
        for marker in markers:
            if not marker.done():
                marker.set_result(None)

    async def _commit(self, batch: list[IngestOp | DeadLetter]) -> None:
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
                len(batch),
                state.attempt_number,
                exc,
            )

        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda exc: not is_refusal(exc)),  # a refused row is isolated below
            wait=wait_exponential_jitter(initial=0.05, max=5.0),
            stop=give_up,
            before_sleep=report,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    touched = await self._isolating(batch)
        except Exception:
            log.exception("database unavailable at shutdown; spilling %d operations", len(batch))
            self._spill(batch)
            return
        self.stats.batches += 1
        if touched and self._on_written is not None:
            try:
                await self._on_written(touched)
            except Exception:  # the messages are stored; what depends on them is rebuilt lazily anyway
                log.exception("dropping the data derived from %d edited or deleted messages failed", len(touched))

    async def _isolating(self, batch: list[IngestOp | DeadLetter]) -> list[Touched]:
        """Write the batch; if a row is refused, halve until the refused rows are alone, and keep those apart.

        Whatever the database says about one row, every other row of the batch is written (in order).
        """
        try:
            touched = await self._writer.write(batch)
        except Exception as exc:
            if not is_refusal(exc):
                raise
            if len(batch) == 1:
                return await self._dead_letter(batch[0], exc)
            middle = len(batch) // 2
            return await self._isolating(batch[:middle]) + await self._isolating(batch[middle:])
        self.stats.written += sum(1 for op in batch if not isinstance(op, DeadLetter))
        return touched

    async def _dead_letter(self, op: IngestOp | DeadLetter, exc: BaseException) -> list[Touched]:
        if isinstance(op, DeadLetter):  # even the dead letter was refused: only the log can keep it now
            log.error("a dead letter could not be stored either (%r); it was: %s", exc, op.reason)
            return []
        reason = f"{type(exc).__name__}: {exc}"
        self._count_dead_letter(reason)
        await self._writer.write([DeadLetter(op, reason)])
        return []

    def _count_dead_letter(self, reason: str) -> None:
        if not self.stats.dead_letters:  # once: the stats count the rest
            log.error("an ingested record could not be stored and was kept as a dead letter: %s", reason)
        self.stats.dead_letters += 1

    def _spill(self, batch: list[IngestOp | DeadLetter]) -> None:
        directory = self._spill_dir or Path("data")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"ingest-spill-{int(time.time())}.jsonl"
        with path.open("a", encoding="utf-8") as spill:
            for op in batch:
                # "record", not "kind" (a message's own field); a DeadLetter keeps its op and reason
                record = {"record": type(op).__name__, **asdict(op)}
                spill.write(json.dumps(record, default=_json_default) + "\n")
        self.stats.spilled += len(batch)
        log.critical("%d operations could not be stored and were saved to %s", len(batch), path)


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot serialise {type(value).__name__}")
