"""Write-behind ingestion: a bounded queue drained in batches, retried on failure, drained on shutdown.

What a full queue means is the producer's choice. By default `put` never waits: what does not fit overflows
to a spill file on disk (bot/memory/intake/spill.py) and is read back, in order, as storage catches up — the Discord
listener and the console must keep replying while storage is slow or down. `put(..., wait=True)` waits for
room instead (back-pressure), for the importer and the benchmarks, which should not outrun storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from bot.lifecycle import set_or_done
from bot.memory.intake.counts import GaveUpError, IngestStats
from bot.memory.intake.spill import Mark, Overflow, database_identity
from bot.memory.types import IngestOp
from db.messages import DeadLetter, Touched, batch_writer_for, is_refusal

log = logging.getLogger(__name__)
T = TypeVar("T")


class HookRefusedError(RuntimeError):
    """The database refused what a batch depends on (not one of its rows): retried like an outage."""


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
    ) -> None:
        self._writer = batch_writer_for(engine)
        self._on_written = on_written  # told what edits and deletes changed, after they are committed
        self._before_write = before_write  # writes what the batch depends on (channel rules); may raise: retried
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
        self._last_error: str | None = None  # why the last write failed: what a stop says of what it kept
        self._worker: asyncio.Task[None] | None = None
        self.stats = IngestStats()

    @property
    def pending(self) -> int:
        """Operations accepted but not yet handed to the writer (in memory or on disk)."""
        return len(self._items) - self._markers + len(self._overflow)

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
            self._count_dead_letter(op.reason)
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
            await self._writer.close()
            self._closed = True
        if self.stats.spilled:
            why = self._last_error or f"storage did not take them within {self._shutdown_retry_seconds:g} s"
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
            log.warning("storage caught up: the %d operations kept on disk meanwhile are stored", self._overflowing)
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
        if batch or self._before_write is not None:  # a flush also waits for what the hook has pending
            await self._commit(batch)
        for marker in markers:
            marker.reached()

    async def _commit(self, batch: list[IngestOp | DeadLetter]) -> None:
        if self._give_up.is_set():  # the stop already found storage unavailable: don't wait for it again
            if batch:
                await self._keep(batch)
            return

        def report(state: RetryCallState) -> None:
            self.stats.failed_attempts += 1
            exc = state.outcome.exception() if state.outcome else None
            self._last_error = f"last error: {exc!r}"
            log.error(
                "writing %d ingested operations failed (attempt %d), retrying: %r",
                len(batch),
                state.attempt_number,
                exc,
            )

        # While running we retry for as long as it takes (new operations overflow to disk meanwhile); a stop
        # waits `shutdown_retry_seconds` for storage and then keeps the rest in a spill file.
        retrying = AsyncRetrying(
            # A cancellation is never retried (tenacity would swallow it and the stop would wait forever); a refused
            # row is isolated below.
            retry=retry_if_exception(lambda exc: isinstance(exc, Exception) and not is_refusal(exc)),
            wait=wait_exponential_jitter(initial=0.05, max=5.0),
            stop=lambda state: self._give_up.is_set(),
            sleep=self._pause,
            before_sleep=report,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    touched = await self._unless_given_up(self._attempt(batch))
        except Exception:
            if not self._give_up.is_set():
                # Not expected while running (failures are retried): the batch waits on disk, in line, and this
                # process stores it when its turn comes, not only a later start.
                log.exception("%d ingested operations could not be written; trying them again later", len(batch))
                for op in batch:
                    self._overflow.append(op)
                self._overflowing += len(batch)
                return
            if batch:
                await self._keep(batch)
            return
        self.stats.batches += bool(batch)
        if touched and self._on_written is not None:
            try:
                await self._unless_given_up(self._on_written(touched))
            except Exception:  # the messages are stored; what depends on them is rebuilt lazily anyway
                log.exception("dropping the data derived from %d edited or deleted messages failed", len(touched))

    async def _attempt(self, batch: list[IngestOp | DeadLetter]) -> list[Touched]:
        if self._before_write is not None:
            try:
                await self._before_write()
            except Exception as exc:
                # What the batch depends on (a channel's rule) was not written: the batch waits and tries again.
                # Never a reason to send the batch's rows away: none of them was refused.
                if is_refusal(exc):
                    raise HookRefusedError(repr(exc)) from exc
                raise
        return await self._isolating(batch) if batch else []

    async def _pause(self, seconds: float) -> None:
        """Sleep between attempts, but not past the moment a stop gives up on storage."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._give_up.wait(), seconds)

    async def _unless_given_up(self, work: Awaitable[T]) -> T:
        """Await `work`, cancelling it if a stop gives up on storage first (a stuck write must not hold the stop)."""
        task = asyncio.ensure_future(work)
        stopper = asyncio.ensure_future(self._give_up.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            stopper.cancel()
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)  # let a cancelled write roll back, briefly
        raise GaveUpError

    async def _keep(self, batch: list[IngestOp | DeadLetter]) -> None:
        try:
            await self._overflow.keep(batch)
        except OSError:  # nowhere left to keep them; the worker must still drain the rest and reach the flushes
            log.critical("%d ingested operations could neither be stored nor kept in a spill file", len(batch))
            return
        self.stats.spilled += len(batch)

    async def _isolating(self, batch: list[IngestOp | DeadLetter]) -> list[Touched]:
        """Write the batch; if a row is refused, halve until the refused rows are alone, and keep those apart.

        Whatever the database says about one row, every other row of the batch is written (in order).
        """
        try:
            written = await self._writer.write(batch)
        except Exception as exc:
            if not is_refusal(exc):
                raise
            if len(batch) == 1:
                return await self._dead_letter(batch[0], exc)
            middle = len(batch) // 2
            return await self._isolating(batch[:middle]) + await self._isolating(batch[middle:])
        self.stats.written += sum(1 for op in batch if not isinstance(op, DeadLetter))
        self.stats.new_messages += written.new_messages
        self.stats.known_messages += written.known_messages
        return written.touched

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
