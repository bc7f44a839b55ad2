"""Committing one batch of the write-behind queue: retried while storage is away, a refused row isolated
into a dead letter, and given up at once when a stop has waited long enough (bot/memory/intake/queue.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from bot.faults import Fault, describe, storage_trouble
from bot.memory.intake.counts import GaveUpError, IngestStats
from bot.memory.types import IngestOp
from db.busy import is_busy
from db.ingest_rows import DeadLetter, Touched, is_refusal
from db.messages import BatchWriter

log = logging.getLogger(__name__)
T = TypeVar("T")
STUCK_SECONDS = 10.0  # a write waiting this long (a table lock, a hung connection) is a storage fault too
SOURCE = "ingest"
Batch = list[IngestOp | DeadLetter]


_BACKOFF = wait_exponential_jitter(initial=0.05, max=5.0)


def _busy_wait() -> float:
    """How long to wait before writing a batch again that met a busy database: a moment, jittered."""
    return random.uniform(0.02, 0.2)


def _busy(state: RetryCallState) -> bool:
    exc = state.outcome.exception() if state.outcome else None
    return exc is not None and is_busy(exc)


class HookRefusedError(RuntimeError):
    """The database refused what a batch depends on (not one of its rows): retried like an outage."""


class BatchCommitter:
    """Writes batches for the queue; `commit` says whether a batch is stored (else the queue keeps it)."""

    def __init__(
        self,
        writer: BatchWriter,
        stats: IngestStats,
        give_up: asyncio.Event,
        *,
        before_write: Callable[[], Awaitable[None]] | None = None,
        on_written: Callable[[list[Touched]], Awaitable[None]] | None = None,
        fault: Fault | None = None,
        held: Callable[[], int] = lambda: 0,
    ) -> None:
        self.writer = writer
        self.stats = stats
        self._give_up = give_up  # set once a stop has waited long enough for storage
        self.before_write = before_write  # writes what the batch depends on (channel rules); may raise: retried
        self._on_written = on_written  # told what edits and deletes changed, after they are committed
        self.last_error: str | None = None  # why the last write failed: what a stop says of what it kept
        self.fault = fault or Fault("storage")  # says "down", "still down", "back" instead of a line per attempt
        self._held = held  # operations waiting behind this batch: what "back" says is being written
        self.stuck_seconds = STUCK_SECONDS
        self._busy_since: float | None = None  # when the batch being written first met a busy database

    async def commit(self, batch: Batch) -> bool:
        """Write `batch` (and what the hook has pending); False when it could not be: the caller keeps it."""
        if self._give_up.is_set():  # the stop already found storage unavailable: don't wait for it again
            return False
        self._busy_since = None
        # While running we retry for as long as it takes (new operations overflow to disk meanwhile); a stop
        # waits `shutdown_retry_seconds` for storage and then keeps the rest in a spill file.
        retrying = AsyncRetrying(
            # A cancellation is never retried (tenacity would swallow it and the stop would wait forever); a refused
            # row is isolated below.
            retry=retry_if_exception(lambda exc: isinstance(exc, Exception) and not is_refusal(exc)),
            # Storage away: back off up to 5 s. Busy: at once (with jitter), the lock timeout has spaced it already.
            wait=lambda state: _busy_wait() if _busy(state) else _BACKOFF(state),
            stop=lambda state: self._give_up.is_set(),
            sleep=self._pause,
            before_sleep=self._report,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    touched = await self._watched(self._unless_given_up(self._attempt(batch)))
        except Exception as exc:  # noqa: BLE001 - the fault logs it (traceback once per new cause)
            if not self._give_up.is_set():
                self.fault.failed(exc, source=SOURCE)
            return False
        if self.fault.down and batch:  # an empty batch may not have touched storage at all
            self.fault.ok(SOURCE, replayed=f"writing the {len(batch) + self._held():,} operations held meanwhile")
        self.stats.batches += bool(batch)
        if touched and self._on_written is not None:
            try:
                await self._unless_given_up(self._on_written(touched))
            except Exception as exc:  # the messages are stored; what depends on them is rebuilt lazily anyway
                if not storage_trouble(exc):
                    log.exception("dropping the data derived from %d edited or deleted messages failed", len(touched))
                else:
                    self.fault.failed(exc, source="after writes", hold=False)
        return True

    def _report(self, state: RetryCallState) -> None:
        """An attempt failed: the storage fault hears of it, unless the database was only busy for a moment."""
        exc = state.outcome.exception() if state.outcome else None
        if exc is not None and is_busy(exc):
            # A deadlock with another process's batch, or a lock wait that ran out (a process frozen inside its
            # transaction): retried quietly; storage counts as down only if it stays busy past stuck_seconds.
            self.stats.busy_retries += 1
            now = time.monotonic()
            self._busy_since = self._busy_since or now
            if now - self._busy_since < self.stuck_seconds:
                return
        self.stats.failed_attempts += 1
        self.last_error = f"last error: {describe(exc) if exc is not None else 'unknown'}"  # no statement parameters
        self.fault.failed(exc if exc is not None else "unknown", source=SOURCE)

    async def _attempt(self, batch: list[IngestOp | DeadLetter]) -> list[Touched]:
        if self.before_write is not None:
            try:
                await self.before_write()
            except Exception as exc:
                # What the batch depends on (a channel's rule) was not written: the batch waits and tries again.
                # Never a reason to send the batch's rows away: none of them was refused.
                if is_refusal(exc):
                    raise HookRefusedError(repr(exc)) from exc
                raise
        return await self._isolating(batch) if batch else []

    async def _watched(self, work: Awaitable[T]) -> T:
        """Await a write; one that waits past `stuck_seconds` (a lock held elsewhere) reports storage down."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        handle: asyncio.TimerHandle | None = None

        def stuck() -> None:
            nonlocal handle
            waited = loop.time() - started
            self.fault.failed(f"StuckWrite: a write has waited {waited:.0f} s (a lock held elsewhere?)", source=SOURCE)
            handle = loop.call_later(self.stuck_seconds, stuck)  # reminders go out at most once a minute

        handle = loop.call_later(self.stuck_seconds, stuck)
        try:
            return await work
        finally:
            handle.cancel()

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

    async def _isolating(self, batch: list[IngestOp | DeadLetter]) -> list[Touched]:
        """Write the batch; if a row is refused, halve until the refused rows are alone, and keep those apart.

        Whatever the database says about one row, every other row of the batch is written (in order).
        """
        try:
            written = await self.writer.write(batch)
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
        self.count_dead_letter(reason)
        await self.writer.write([DeadLetter(op, reason)])
        return []

    def count_dead_letter(self, reason: str) -> None:
        if not self.stats.dead_letters:  # once: the stats count the rest
            log.error("an ingested record could not be stored and was kept as a dead letter: %s", reason)
        self.stats.dead_letters += 1
