"""Keeping this process's caches true when memory changes: here, or in another process sharing the database.

`Generations` is a counter per guild, bumped by every change; a build that began before a change neither
caches nor stores what it made (`Summaries`, `Rollups`, `ContextBuilder` compare the counter). `ChangeFeed`
hears of other processes' changes through the change log (db/changes.py): it polls every half second, and
on PostgreSQL a NOTIFY wakes it at once, so a CLI purge reaches a running bot's caches within a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from bot.faults import Fault
from db import changes
from db.changes import Change

log = logging.getLogger(__name__)
POLL_SECONDS = 0.5
RELISTEN_SECONDS = 5.0
SOURCE = "change feed"


class Generations:
    """How many changes this process has seen per guild (its own and others')."""

    def __init__(self) -> None:
        self._counts: defaultdict[int, int] = defaultdict(int)

    def of(self, guild_id: int) -> int:
        """The guild's current generation; compare before caching what a build made."""
        return self._counts[guild_id]

    def bump(self, guild_id: int) -> None:
        """Something in the guild changed."""
        self._counts[guild_id] += 1


class ChangeFeed:
    """Calls `on_change` for every change another process logs, in order, within about POLL_SECONDS."""

    def __init__(
        self,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession],
        on_change: Callable[[Change], Awaitable[None]],
        *,
        fault: Fault | None = None,
    ) -> None:
        self._engine = engine
        self._fault = fault or Fault("storage")
        self._sessions = sessions
        self._on_change = on_change
        self.origin = uuid.uuid4().hex[:16]  # this process: its own changes are handled where they are made
        self._last = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: AsyncConnection | None = None
        self._raw: Any = None  # the listening driver connection (asyncpg), to tell when it was lost
        self._polling = asyncio.Lock()  # a reply's catch-up and the timed poll must not apply a change twice
        self._listen_failed_at = 0.0
        self.caught_up_at: float | None = None  # time.monotonic() when the log was last read to its end

    async def start(self) -> None:
        """Begin after the newest change so far (older ones are in SQL already), and listen."""
        async with self._sessions() as session:
            self._last = await changes.newest(session)
        self.caught_up_at = time.monotonic()
        if self._engine.dialect.name == "postgresql":
            await self._listen()
        self._task = asyncio.create_task(self._run(), name="elefant-change-feed")

    async def _listen(self, *, quiet: bool = False) -> None:
        try:
            self._listener = await self._engine.connect()
            raw: Any = (await self._listener.get_raw_connection()).driver_connection
            await raw.add_listener(changes.CHANNEL, lambda *_: self._wake.set())
            # A lost connection (a database restart) wakes the loop, which listens again on a new one.
            raw.add_termination_listener(lambda *_: self._wake.set())
            self._raw = raw
        except Exception:  # polling alone still keeps caches within a second of the truth
            if not quiet:  # again after a lost connection: the storage outage says so already
                log.warning("could not LISTEN for memory changes; polling only", exc_info=True)
            await self._close_listener()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):  # not wait_for: on 3.11 it can swallow a cancel
                async with asyncio.timeout(POLL_SECONDS):
                    await self._wake.wait()
            self._wake.clear()
            if self._engine.dialect.name == "postgresql" and not self._listening():
                await self._relisten()
            try:
                await self.poll()
            except Exception as exc:  # noqa: BLE001 - the fault logs it; the database may be away a while
                self._fault.failed(exc, source=SOURCE)
            else:
                self._fault.ok(SOURCE)

    async def poll(self) -> None:
        """Apply every change logged since the last poll (tests call it to skip the wait)."""
        async with self._polling:
            async with self._sessions() as session:
                found = await changes.after(session, self._last)
            for change in found:
                self._last = change.id
                if change.origin != self.origin:
                    await self._on_change(change)
            self.caught_up_at = time.monotonic()

    async def catch_up(self) -> None:
        """Before a reply: apply what other processes committed until now, so it never carries what one of
        them changed before the reply began (one indexed read; the timed poll is for idle caches). A failure
        leaves the caches as they are: the reply goes on, and the timed poll tries again."""
        if self._task is None:  # not following anyone (not started, or closed)
            return
        try:
            await self.poll()
        except Exception:
            log.debug("reading the change log before a reply failed", exc_info=True)

    def _listening(self) -> bool:
        return self._listener is not None and self._raw is not None and not self._raw.is_closed()

    async def _relisten(self) -> None:
        """LISTEN again after the connection was lost (a database restart): at most every RELISTEN_SECONDS."""
        now = asyncio.get_running_loop().time()
        if now - self._listen_failed_at < RELISTEN_SECONDS:
            return
        await self._close_listener()
        await self._listen(quiet=True)
        if self._listener is None:
            self._listen_failed_at = now
        else:
            self._listen_failed_at = 0.0
            self._wake.set()  # what was notified while the connection was down is read at once

    async def close(self) -> None:
        """Stop polling and listening."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._close_listener()

    async def _close_listener(self) -> None:
        self._raw = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
            self._listener = None
