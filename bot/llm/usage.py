"""Usage accounting: one `llm_calls` row per call, written behind the call in batches, never failing it.

A reply must not wait on bookkeeping: `record` only appends to a buffer, and a background task writes the
buffer at most every second (or as soon as it holds a batch). `flush` writes what is pending now (stats
commands, tests); `close` flushes once more at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.faults import Fault
from db import usage as store

log = logging.getLogger(__name__)
SOURCE = "usage rows"
FLUSH_SECONDS = 1.0
BATCH = 200
MAX_PENDING = 50_000  # if the database stays down, the oldest records go first (counted, logged)


class UsageRecorder:
    """Buffers call records and writes them in the background; a failing write is logged and retried later."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._sessions = sessions
        self.storage = Fault("storage")  # bot/app.py hands it to memory too: one storage fault per process
        self._clock = clock
        self._pending: list[dict[str, Any]] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self.dropped = 0
        self._observers: list[Callable[[Mapping[str, Any]], None]] = []

    def observe(self, observer: Callable[[Mapping[str, Any]], None]) -> None:
        """Also hand every recorded row to `observer` as it is recorded (the Prometheus counters)."""
        self._observers.append(observer)

    def record(
        self,
        *,
        operation: str,
        role: str,
        provider: str,
        model: str,
        tokens_in: int,
        tokens_out: int,
        latency_s: float,
        outcome: str,
        guild_id: int | None,
    ) -> None:
        """Queue one row; returns at once."""
        row: dict[str, Any] = {
            "at": self._clock(),
            "guild_id": guild_id,
            "operation": operation,
            "role": role,
            "provider": provider,
            "model": model,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "latency_ms": round(latency_s * 1000),
            "outcome": outcome,
        }
        self._pending.append(row)
        for observer in self._observers:
            observer(row)
        if len(self._pending) > MAX_PENDING:
            self.dropped += len(self._pending) - MAX_PENDING
            del self._pending[: len(self._pending) - MAX_PENDING]
            log.error("usage records could not be written for a while; %d dropped so far", self.dropped)
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._lock = asyncio.Lock()
            self._task = asyncio.create_task(self._run(), name="elefant-usage")
        if len(self._pending) >= BATCH and self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            with contextlib.suppress(TimeoutError):  # not wait_for: on 3.11 it can swallow a cancel
                async with asyncio.timeout(FLUSH_SECONDS):
                    await self._wake.wait()
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        """Write what is pending now, and wait for a write already under way (the background writer may have taken
        the rows a moment ago: `/memory-admin stats` read no calls after one, on a busy machine)."""
        lock = self._lock or asyncio.Lock()
        async with lock:
            rows, self._pending = self._pending, []
            if not rows:
                return
            try:
                async with self._sessions() as session, session.begin():
                    await store.record(session, rows)
            except (SQLAlchemyError, OSError) as exc:  # the storage fault says it once; the rows wait
                self.storage.failed(exc, source=SOURCE)
                self._pending[:0] = rows
            else:
                self.storage.ok(SOURCE)

    async def close(self) -> None:
        """Stop the background writer after one last flush."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()
