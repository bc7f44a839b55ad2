"""Write-behind ingestion: a bounded queue drained in batches, retried on failure, drained on shutdown.

What a full queue means is the producer's choice. By default `put` never waits: what does not fit overflows
to a spill file on disk (bot/memory/intake/spill.py) and is read back, in order, as storage catches up — the Discord
listener and the console must keep replying while storage is slow or down. `put(..., wait=True)` waits for
room instead (back-pressure), for the importer and the benchmarks, which should not outrun storage.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.faults import Fault
from bot.lifecycle import set_or_done
from bot.memory.intake.committer import BatchCommitter
from bot.memory.intake.counts import IngestStats
from bot.memory.intake.spill import Mark, Overflow, database_identity
from bot.memory.types import IngestOp
from db.ingest_rows import DeadLetter, Touched
from db.messages import KeptFrom, batch_writer_for

log = logging.getLogger(__name__)
FLUSH_YIELD_SECONDS = 0.25  # the longest a batch the flush window let go waits for replies under way


class WriteBehindQueue:
    """Accepts operations without touching the database; a single worker writes them in batches.

    A deque with a low-water mark instead of asyncio.Queue: a producer waiting on a full queue is woken
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
        shutdown_retry_seconds: float = 5.0,
        spill_dir: Path | None = None,
        on_written: Callable[[list[Touched]], Awaitable[None]] | None = None,
        before_write: Callable[[], Awaitable[None]] | None = None,
        yield_to: Callable[[float], Awaitable[object]] | None = None,
        fault: Fault | None = None,
        kept_from: KeptFrom | None = None,
    ) -> None:
        self._yield_to = yield_to  # returns once no reply is under way, or after the seconds given
        self._batch_rows = batch_rows
        self._flush_seconds = flush_ms / 1000
        self._max_queue = max_queue
        self._low_water = max_queue // 2
        self._items: deque[IngestOp | DeadLetter | Mark] = deque()
        self._markers = 0
        url = engine.url
        sqlite_path = url.database if url.get_backend_name() == "sqlite" else None
        self._overflow = Overflow(
            (spill_dir or Path("data")).expanduser().absolute(),
            database_identity(url.render_as_string(hide_password=True), sqlite_path),
        )
        self._overflowing = 0  # operations kept on disk in the current episode (0: none running)
        self._space = asyncio.Event()
        self._space.set()
        self._arrived = asyncio.Event()
        self._shutdown_retry_seconds = shutdown_retry_seconds
        self._give_up = asyncio.Event()  # set once a stop has waited long enough for storage
        self._closing = False
        self._closed = False
        self._worker: asyncio.Task[None] | None = None
        self.stats = IngestStats()
        fault = fault or Fault("storage")
        fault.holds("operations held", lambda: self.pending)
        self.committer = BatchCommitter(
            batch_writer_for(engine, kept_from=kept_from),  # retention holds for every way in, spill replay too
            self.stats,
            self._give_up,
            before_write=before_write,
            on_written=on_written,
            fault=fault,
            held=lambda: self.pending,
        )

    @property
    def pending(self) -> int:
        """Operations accepted but not yet handed to the writer (in memory or on disk)."""
        return len(self._items) - self._markers + len(self._overflow)

    @property
    def on_disk(self) -> int:
        """Of `pending`, the operations kept in spill files until storage catches up."""
        return len(self._overflow)

    def start(self) -> None:
        """Start the worker task, first in line what earlier processes left in spill files; idempotent."""
        if self._worker is not None:
            return
        recovered = self._overflow.adopt_leftovers()
        if recovered:
            self.stats.recovered = self._overflowing = recovered
            log.warning("storing %d operations an earlier stop kept in spill files, before anything new", recovered)
        self._worker = asyncio.create_task(self._run(), name="elefant-ingest")

    def offer(self, op: IngestOp | DeadLetter) -> bool:
        """Accept `op` into memory if there is room there, without awaiting; False when the caller must `put`."""
        if self._closing:
            raise RuntimeError("ingestion is closed")
        if self._overflow or len(self._items) >= self._max_queue:  # full, or in line behind what is on disk
            return False
        if self._worker is None:
            self.start()
            if self._overflow:
                return False
        if isinstance(op, DeadLetter):  # refused before the queue (an impossible id): counted like the rest
            self.committer.count_dead_letter(op.reason)
        self._items.append(op)
        self.stats.accepted += 1
        self._arrived.set()
        return True

    async def put(self, op: IngestOp | DeadLetter, *, wait: bool = False) -> None:
        """Accept one operation, never dropping it.

        When the queue is full the operation is kept on disk, without waiting; with `wait=True` the caller
        waits for room instead (back-pressure).
        """
        if self.offer(op):
            return
        if wait:
            while not self.offer(op):
                self._space.clear()
                await self._space.wait()
            return
        if not self._overflowing:
            log.warning(
                "ingestion is %d operations behind storage; new ones are kept on disk under %s until it catches up",
                len(self._items),
                self._overflow.directory,
            )
        self._overflow.append(op)
        self._overflowing += 1
        self.stats.accepted += 1
        self.stats.overflowed += 1
        self._arrived.set()

    async def flush(self) -> None:
        """Return once everything accepted before this call is committed (later arrivals don't delay it)."""
        if self._worker is None or self._worker.done():  # nothing can be pending (never started, or closed)
            return
        mark = Mark(done=asyncio.get_running_loop().create_future())
        if not self._overflow.mark(mark):
            self._items.append(mark)
            self._markers += 1
        self._arrived.set()
        assert mark.done is not None
        await mark.done

    async def close(self) -> None:
        """Stop accepting and drain; after `shutdown_retry_seconds` without storage, keep the rest in a spill file."""
        if self._closed:
            return
        self._closing = True
        timer = asyncio.get_running_loop().call_later(self._shutdown_retry_seconds, self._give_up.set)
        try:
            if self._worker is not None:
                self._arrived.set()
                await self._worker
                await self._commit([])  # what the hook still has pending (a channel seen without a message)
        finally:
            timer.cancel()
            await self._overflow.close()
            await self.committer.writer.close()
            self._closed = True
        if self.stats.spilled:
            why = self.committer.last_error or f"storage did not take them within {self._shutdown_retry_seconds:g} s"
            log.critical(
                "%s operations accepted before this stop could not be stored (%s) and are kept in %s; they are "
                "stored when Elefant next starts on this database",
                f"{self.stats.spilled:,}",
                why,
                self._overflow.kept_path,
            )

    async def _run(self) -> None:
        in_flight: asyncio.Task[None] | None = None
        while True:
            if self._overflow and len(self._items) <= self._low_water:
                await self._refill()
            if not self._items:
                if self._overflow:
                    continue
                if self._closing:
                    break
                self._arrived.clear()
                await self._arrived.wait()
                continue
            await self._gather()
            await self._after_replies()
            batch, markers = self._take()
            # The next batch is gathered while this one is written; batches still commit in order.
            if in_flight is not None:
                await in_flight
            in_flight = asyncio.create_task(self._write(batch, markers))
        if in_flight is not None:
            await in_flight

    async def _refill(self) -> None:
        """Take the oldest operations kept on disk back into memory (they are older than anything in memory)."""
        room = max(1, min(self._max_queue - len(self._items), 4 * self._batch_rows))
        try:
            items = await self._overflow.take(room)
        except OSError:
            log.exception("reading the ingest overflow back from %s failed; retrying", self._overflow.directory)
            await asyncio.sleep(1)
            return
        self._markers += sum(1 for item in items if isinstance(item, Mark))
        self._items.extend(items)
        if not self._overflow and self._overflowing:
            self._items.append(Mark(then=self._caught_up))
            self._markers += 1
        self._open_space()

    def _caught_up(self) -> None:
        if self._overflow:  # the queue filled up again meanwhile: the episode goes on
            return
        if self._overflowing and not self._give_up.is_set():
            log.info("storage caught up: the %s operations kept on disk meanwhile are stored", f"{self._overflowing:,}")
        self._overflowing = 0

    def _open_space(self) -> None:
        if len(self._items) <= self._low_water and not self._overflow:
            self._space.set()

    async def _gather(self) -> None:
        """Wait until a batch is full, the flush window closes, or someone flushes or closes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._flush_seconds
        while len(self._items) < self._batch_rows and not (self._markers or self._closing or self._overflow):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                return

    def _only_timed(self) -> bool:
        """Whether the flush window alone lets the next batch go (not a full batch, a flush, a stop or a backlog)."""
        return len(self._items) < self._batch_rows and not (self._markers or self._closing or self._overflow)

    async def _after_replies(self) -> None:
        """A batch the flush window lets go waits while a reply is under way, for FLUSH_YIELD_SECONDS at most and
        only until a flush, a full batch or a stop asks for it: both want the CPU (on SQLite the full-text triggers
        run in the write), and a member is waiting on the reply. (bench.reply, model at 0 ms, two cores: with no
        writes at all chat was ~1 ms faster at p50 and ~1.5 at p99; with this, ~0.5–1 ms at p50.)"""
        if self._yield_to is None or not self._only_timed():
            return
        quiet = asyncio.ensure_future(self._yield_to(FLUSH_YIELD_SECONDS))  # done by then at the latest
        try:
            while not quiet.done() and self._only_timed():
                self._arrived.clear()
                await set_or_done(self._arrived, quiet)
        finally:
            quiet.cancel()

    def _take(self) -> tuple[list[IngestOp | DeadLetter], list[Mark]]:
        batch: list[IngestOp | DeadLetter] = []
        markers: list[Mark] = []
        items = self._items
        while items and len(batch) < self._batch_rows:
            if isinstance(items[0], Mark):
                while items and isinstance(items[0], Mark):
                    markers.append(items.popleft())  # type: ignore[arg-type]
                break
            batch.append(items.popleft())  # type: ignore[arg-type]
        self._markers -= len(markers)
        self._open_space()
        return batch, markers

    async def _write(self, batch: list[IngestOp | DeadLetter], markers: list[Mark]) -> None:
        if batch or self.committer.before_write is not None:  # a flush also waits for what the hook has pending
            await self._commit(batch)
        for marker in markers:
            marker.reached()

    async def _commit(self, batch: list[IngestOp | DeadLetter]) -> None:
        if await self.committer.commit(batch) or not batch:
            return
        if self._give_up.is_set():
            await self._keep(batch)
            return
        # Not expected while running (failures are retried): the batch waits on disk, in line, and this process
        # stores it when its turn comes, not only a later start.
        for op in batch:
            self._overflow.append(op)
        self._overflowing += len(batch)

    async def _keep(self, batch: list[IngestOp | DeadLetter]) -> None:
        try:
            await self._overflow.keep(batch)
        except OSError:  # nowhere left to keep them; the worker must still drain the rest and reach the flushes
            log.critical("%d ingested operations could neither be stored nor kept in a spill file", len(batch))
            return
        self.stats.spilled += len(batch)
