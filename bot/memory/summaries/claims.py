"""One model call per derived thing across processes: a guild-day's summaries, a history, a rollup.

Single flight keeps one build per key inside a process; on PostgreSQL several processes (shards, the bot and
the CLI) share the database, and each would otherwise pay for the same day. Before building, a process claims
the thing in `build_claims` with a lease it renews while it works; a process that finds it claimed waits and
reads the winner's stored result instead of calling the model. A claim rather than an advisory lock: no
connection (or transaction) is held across a model call that may take minutes, a stalled process whose event
loop stops renewing loses its claim, and it works through a transaction-pooling proxy. A process that crashes
mid-build leaves a claim that lapses after SUMMARY_LEASE_SECONDS, and the next one takes over.

SQLite has one writing process (bot/app.py holds a lock file), so there in-process single flight is enough and
no claim is written: a write on the build path would queue behind the ingest writer for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.faults import storage_trouble
from db import claims as store

log = logging.getLogger(__name__)
T = TypeVar("T")
POLL_SECONDS = 0.25  # how often a waiting process looks for the winner's result
PRUNE_AFTER_SECONDS = 3600.0


def claim_key(what: tuple[Hashable, ...]) -> str:
    """The row key of a build: a digest, so the table holds no member's id."""
    return hashlib.blake2b(repr(what).encode(), digest_size=20).hexdigest()


class Claims:
    """`once(what, load, build)`: build here if this process wins the claim, else the winner's stored result."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], *, enabled: bool, lease: float) -> None:
        self._sessions = sessions
        self.enabled = enabled
        self.lease = lease
        self.won = 0  # builds this process claimed
        self.waited = 0  # times it found another process building and waited for its result

    async def prune(self) -> None:
        """Remove claims that crashed processes left long ago (a lapsed claim is taken over anyway)."""
        if self.enabled:
            async with self._sessions() as session, session.begin():
                await store.prune(session, older_than=PRUNE_AFTER_SECONDS)

    async def once(
        self,
        what: tuple[Hashable, ...],
        *,
        load: Callable[[], Awaitable[T | None]],
        build: Callable[[], Awaitable[T]],
    ) -> T:
        """What `build()` makes, made by one process at a time; the caller has already looked with `load()`.

        The winner of the claim loads once more (another process may have stored it just before) and builds.
        The others poll `load()` while the claim is held; a claim given up without a stored result (the model
        failed, or there was nothing worth storing) is contended for again.
        """
        if not self.enabled:
            return await build()
        key = claim_key(what)
        while True:
            owner = uuid.uuid4().hex
            async with self._holding(key, owner) as won:
                if won:
                    self.won += 1
                    stored = await load()
                    return stored if stored is not None else await build()
            self.waited += 1
            while await self._held(key):
                await asyncio.sleep(POLL_SECONDS)
                if (stored := await load()) is not None:
                    return stored
            if (stored := await load()) is not None:
                return stored

    async def _held(self, key: str) -> bool:
        async with self._sessions() as session:
            return await store.held(session, key)

    @contextlib.asynccontextmanager
    async def _holding(self, key: str, owner: str) -> AsyncIterator[bool]:
        async with self._sessions() as session, session.begin():
            won = await store.take(session, key, owner, lease=self.lease)
        if not won:
            yield False
            return
        renewing = asyncio.create_task(self._renew(key, owner), name="elefant-claim-renewal")
        try:
            yield True
        finally:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
            try:
                async with self._sessions() as session, session.begin():
                    await store.release(session, key, owner)
            except Exception as exc:  # the lease runs out by itself; others wait at most that long
                if not storage_trouble(exc):  # storage away: its fault says so, once
                    log.warning("could not release a build claim; it lapses in %.0f s", self.lease, exc_info=True)

    async def _renew(self, key: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                async with self._sessions() as session, session.begin():
                    if not await store.renew(session, key, owner, lease=self.lease):
                        # Stalled past the lease and taken over: the build goes on, the first to store wins.
                        log.info("a build claim lapsed while this process worked; another process took it over")
                        return
            except Exception as exc:  # the database is away: try again, the lease still covers a while
                if not storage_trouble(exc):  # storage away: its fault says so, once
                    log.warning("could not renew a build claim", exc_info=True)
