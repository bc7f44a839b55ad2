"""Track 1, facts: remember / forget / history / revert, every change a revision in the same transaction."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.caches import CacheReport, CountingLRU, CountingTTL, drop_entries
from bot.memory.coherence import Generations
from db import facts as store
from db.facts import Revision

__all__ = ["FactChange", "FactsModel", "FactsStore", "Revision", "RevisionNotFoundError", "drop_oldest_sentences"]

log = logging.getLogger(__name__)
_CAS_ATTEMPTS = 20
READ_CACHE_SECONDS = 30
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class FactsModel(Protocol):
    """What the facts track needs from a model (an adapter over bot.llm renders the prompts)."""

    async def merge(self, *, guild_id: int, subject: str, existing: str, fact: str, max_chars: int) -> str: ...

    async def remove(self, *, guild_id: int, subject: str, existing: str, fact: str) -> tuple[bool, str]: ...

    async def condense(self, *, guild_id: int, subject: str, existing: str, max_chars: int) -> str: ...


@dataclass(frozen=True, slots=True)
class FactChange:
    """The outcome of a facts operation: what was stored before and after, and whether it applied."""

    before: str
    after: str
    revision_id: int | None
    found: bool = True
    redacted: int = 0  # forgetting: messages, replies and summaries the statement was removed from

    @property
    def changed(self) -> bool:
        """True when a revision was written."""
        return self.revision_id is not None


class RevisionNotFoundError(LookupError):
    """The revision does not exist for that member of that guild."""


class FactsStore:
    """Reads and changes facts; changes for one member are serialised, and safe across processes."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        model: FactsModel,
        *,
        max_chars: int = 1500,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        horizon: Callable[[], datetime | None] = lambda: None,
    ) -> None:
        self._sessions = sessions
        self._horizon = horizon  # a replayed moment (bot/memory/clock.py): facts as they stood then
        self._model = model
        self._max_chars = max_chars
        self._clock = clock
        self._locks: weakref.WeakValueDictionary[tuple[int, int], asyncio.Lock] = weakref.WeakValueDictionary()
        # Reads for context building; changes made here update it at once, other processes' within 30 s.
        self._recent: CountingTTL[tuple[int, int], str | None] = CountingTTL(65536, READ_CACHE_SECONDS)
        self._changes = Generations()  # per guild: a read that saw a change go by is not kept
        # The last value read or written, without expiry: what a reply says while the database is away. Dropped
        # with `_recent` on every change, so it never outlives a forget or a purge.
        self._known: CountingLRU[tuple[int, int], str | None] = CountingLRU(65536)

    def _lock(self, guild_id: int, user_id: int) -> asyncio.Lock:
        key = (guild_id, user_id)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def facts(self, guild_id: int, user_id: int) -> str | None:
        """The stored facts about a member (as they stood at a replayed moment), or None."""
        async with self._sessions() as session:
            if (moment := self._horizon()) is not None:
                return await store.blob_at(session, guild_id, user_id, moment)
            return await store.blob(session, guild_id, user_id)

    async def cached_facts(self, guild_id: int, user_id: int) -> str | None:
        """Like `facts`, from a short-lived cache: for the hot path of building a context."""
        if self._horizon() is not None:  # a replay moves through time: what was cached may be later than its moment
            return await self.facts(guild_id, user_id)
        key = (guild_id, user_id)
        try:
            return self._recent[key]
        except KeyError:
            seen = self._changes.of(guild_id)
            value = await self.facts(guild_id, user_id)
            if self._changes.of(guild_id) == seen:  # no change or purge landed while it was read
                self._recent[key] = self._known[key] = value
            return value

    def known_facts(self, guild_id: int, user_id: int) -> str | None:
        """The facts last read or written here, never from the database (None: nothing known): for a reply
        while the database is away."""
        return self._known.get((guild_id, user_id))

    def cache_report(self) -> CacheReport:
        """Hit rate of the facts read cache."""
        return self._recent.report()

    def drop_cached(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget cached facts of a member, or of a whole guild (after a purge)."""
        self._changes.bump(guild_id)
        drop_entries(self._recent, guild_id, user_id)
        drop_entries(self._known, guild_id, user_id)

    async def remember(self, guild_id: int, user_id: int, fact: str, *, requested_by: int, subject: str) -> FactChange:
        """Merge `fact` into what is known about the member (newer wins), within the size cap."""

        async def compute(existing: str) -> tuple[bool, str]:
            merged = await self._model.merge(
                guild_id=guild_id, subject=subject, existing=existing, fact=fact, max_chars=self._max_chars
            )
            return True, await self._within_cap(guild_id, subject, merged.strip())

        return await self._change(guild_id, user_id, "remember", compute, requested_by)

    async def forget(self, guild_id: int, user_id: int, fact: str, *, requested_by: int, subject: str) -> FactChange:
        """Remove what matches `fact`; when nothing matches, the blob stays byte-for-byte the same."""

        async def compute(existing: str) -> tuple[bool, str]:
            if not existing:
                return False, existing
            found, remaining = await self._model.remove(
                guild_id=guild_id, subject=subject, existing=existing, fact=fact
            )
            return found, remaining.strip() if found else existing

        return await self._change(guild_id, user_id, "forget", compute, requested_by)

    async def history(self, guild_id: int, user_id: int, *, limit: int = 25) -> list[Revision]:
        """The newest revisions first."""
        async with self._sessions() as session:
            return await store.history(session, guild_id, user_id, limit=limit)

    async def revert(self, guild_id: int, user_id: int, revision_id: int, *, requested_by: int) -> FactChange:
        """Undo a revision: restore the blob as it was just before it, recorded as a new revision."""
        async with self._sessions() as session:
            revision = await store.revision(session, guild_id, user_id, revision_id)
        if revision is None:
            raise RevisionNotFoundError(revision_id)
        target = revision.old_blob

        async def compute(existing: str) -> tuple[bool, str]:
            return True, target

        return await self._change(guild_id, user_id, f"revert:{revision_id}"[:16], compute, requested_by)

    async def _within_cap(self, guild_id: int, subject: str, blob: str) -> str:
        if len(blob) <= self._max_chars:
            return blob
        condensed = (
            await self._model.condense(guild_id=guild_id, subject=subject, existing=blob, max_chars=self._max_chars)
        ).strip()
        if len(condensed) <= self._max_chars:
            return condensed
        log.warning("condensed facts still over %d chars; dropping the oldest sentences", self._max_chars)
        return drop_oldest_sentences(condensed, self._max_chars)

    async def _change(
        self,
        guild_id: int,
        user_id: int,
        op: str,
        compute: Callable[[str], object],
        requested_by: int,
    ) -> FactChange:
        # The in-process lock orders concurrent requests; the compare-and-swap below protects against
        # other processes sharing the database, without holding a transaction across the model call.
        async with self._lock(guild_id, user_id):
            for _ in range(_CAS_ATTEMPTS):
                before = await self.facts(guild_id, user_id) or ""
                applies, after = await compute(before)  # type: ignore[misc]
                if not applies or after == before:
                    return FactChange(before, before, None, found=applies)
                revision_id = await self._swap(
                    guild_id=guild_id, user_id=user_id, op=op, before=before, after=after, requested_by=requested_by
                )
                if revision_id is not None:
                    self._changes.bump(guild_id)
                    self._recent[(guild_id, user_id)] = self._known[(guild_id, user_id)] = after or None
                    return FactChange(before, after, revision_id)
                log.info("facts of a member changed under us; merging again")
                await asyncio.sleep(random.uniform(0, 0.05))  # break the symmetry between two processes
        raise RuntimeError("facts kept changing concurrently; giving up")

    async def _swap(
        self, *, guild_id: int, user_id: int, op: str, before: str, after: str, requested_by: int
    ) -> int | None:
        """Write `after` only if the blob is still `before`; the revision id, or None on a conflict."""
        async with self._sessions() as session, session.begin():
            return await store.swap(
                session,
                guild_id=guild_id,
                user_id=user_id,
                op=op,
                before=before,
                after=after,
                requested_by=requested_by,
                at=self._clock(),
            )


def drop_oldest_sentences(blob: str, max_chars: int) -> str:
    """Keep the newest sentences (facts are appended) that fit in `max_chars`."""
    kept: list[str] = []
    size = 0
    for sentence in reversed(_SENTENCE.split(blob.strip())):
        extra = len(sentence) + (1 if kept else 0)
        if size + extra > max_chars:
            break
        kept.append(sentence)
        size += extra
    return " ".join(reversed(kept)) if kept else blob[-max_chars:]
