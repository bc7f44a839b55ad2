"""get_memories: facts + today + days 2–7 merged by the model, cached by content, never failing on the LLM."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from datetime import date, datetime

from cachetools import TTLCache
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.faults import storage_trouble
from bot.lifecycle import keep
from bot.llm.budget import assemble, memory_sections, with_facts
from bot.llm.client import LLM
from bot.llm.prompts import when
from bot.llm.tokens import estimate_tokens, trim_to_tokens
from bot.llm.types import LLMError
from bot.memory.caches import CacheReport, CountingLRU, drop_entries
from bot.memory.clock import Clock, local_day
from bot.memory.coherence import Generations
from bot.memory.facts.store import FactsStore
from bot.memory.flight import SingleFlight
from bot.memory.names import NameDirectory
from bot.memory.summaries.daily import Summaries
from bot.memory.summaries.extract import extract
from bot.memory.summaries.rollups import Rollups
from bot.settings import Settings

log = logging.getLogger(__name__)
LAST_GOOD_SECONDS = 7 * 24 * 3600
BUILDING = "context build for a member of guild"  # the background work's name, then the guild's id
HEAD_START_SECONDS = 0.05  # a build still running after this is waiting on the model: prepare the stand-in


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def fallback_context(facts: str, today: str, history: str, earlier: str = "", *, budget: int) -> str | None:
    """Facts first, then today, the last week and earlier rollups, labelled and within the token budget."""
    return assemble(memory_sections(facts, today, history, earlier), budget) or None


class ContextBuilder:
    """Builds a member's memory context on demand; the caches make repeated calls nearly free."""

    def __init__(
        self,
        facts: FactsStore,
        summaries: Summaries,
        llm: LLM,
        names: NameDirectory,
        *,
        sessions: async_sessionmaker[AsyncSession],
        settings: Settings,
        clock: Clock,
        rollups: Rollups | None = None,
        generations: Generations | None = None,
    ) -> None:
        self._sessions = sessions
        self._facts = facts
        self._summaries = summaries
        self._rollups = rollups
        self._llm = llm
        self._names = names
        self._settings = settings
        self._clock = clock
        self._generations = generations or Generations()
        self._merged: CountingLRU[tuple[int, int, str], str] = CountingLRU(65536)
        self._last_good: TTLCache[tuple[int, int], str] = TTLCache(65536, LAST_GOOD_SECONDS, timer=clock.monotonic)
        self._flight = SingleFlight()

    def cache_report(self) -> CacheReport:
        """Hit rate of the merged-context cache (keyed by the content hash of its inputs)."""
        return self._merged.report()

    async def close(self) -> None:
        """Stop the builds that went on in the background after the latency guard answered."""
        await self._flight.stop()

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget cached contexts of a guild (or a member) and the guild's rollups (after a change)."""
        drop_entries(self._merged, guild_id, user_id)
        drop_entries(self._last_good, guild_id, user_id)
        if self._rollups is not None:
            self._rollups.drop(guild_id)

    def last_good(self, guild_id: int, user_id: int) -> str | None:
        """The member's last merged context built here (dropped on every change), without any read."""
        return self._last_good.get((guild_id, user_id))

    async def get_memories(
        self, guild_id: int, user_id: int, *, now: datetime | None = None, patient: bool = False
    ) -> str | None:
        """The context for a member, or None when nothing is known; waits at most MEMORY_WAIT_SECONDS (no limit
        when `patient`: a view of what memory holds, not a reply)."""
        now = now or self._clock.now()
        flight = ("ctx", guild_id, user_id, self._generations.of(guild_id))  # never join a build from before a change
        build = self._flight.start(flight, lambda: self._build(guild_id, user_id, now))
        if patient:
            return await asyncio.shield(build)
        loop = asyncio.get_running_loop()
        wait = self._settings.memory_wait_seconds
        deadline = loop.time() + wait
        # Most builds come from the caches at once; only one that waits on the model needs a stand-in.
        await asyncio.wait({build}, timeout=min(wait, HEAD_START_SECONDS))
        if build.done():
            return build.result()
        last = self._last_good.get((guild_id, user_id))
        stand_in = None if last is not None else asyncio.ensure_future(self._stand_in(guild_id, user_id, now))
        try:
            await asyncio.wait({build}, timeout=max(0.0, deadline - loop.time()))
        except BaseException:
            if stand_in is not None:
                stand_in.cancel()
            raise
        if build.done():
            if stand_in is not None:  # one short read: left to finish, not cut off inside its session
                keep(stand_in, name=f"unused stand-in context in guild {guild_id}")
            return build.result()
        # The build goes on in the background and warms the caches for the next reply.
        keep(build, name=f"{BUILDING} {guild_id}")
        return last if stand_in is None else await stand_in

    async def _stand_in(self, guild_id: int, user_id: int, now: datetime) -> str | None:
        """What a reply gets while its context is built: the facts, and today and the week quoted offline."""
        facts = await self._facts.cached_facts(guild_id, user_id) or ""
        today, week = "", ""
        try:
            today, week = await extract(self._sessions, self._summaries, guild_id, user_id, now)
        except (SQLAlchemyError, OSError) as exc:  # the database is busy or away: the facts still answer
            # Away: the storage fault says so once (bot/faults.py); a reply's line each would be the flood.
            level = logging.DEBUG if storage_trouble(exc) else logging.WARNING
            log.log(level, "no extract of the day for a member of guild %s; facts only", guild_id, exc_info=True)
        return fallback_context(facts, today, week, budget=self._settings.context_token_budget)

    async def _build(self, guild_id: int, user_id: int, now: datetime) -> str | None:
        generation = self._generations.of(guild_id)
        facts = await self._facts.cached_facts(guild_id, user_id) or ""
        today_day = local_day(now, self._summaries.zone(guild_id))
        cached = self._summaries.cached_today(guild_id, now)
        if cached is not None:  # the warm path (today was asked for this hour): no task is made
            today = cached.get(user_id, "")
            history, earlier = await self._past(guild_id, user_id, today_day)
        else:  # cold: today's batch and the week's history each wait on the model, not on each other
            today_job = asyncio.ensure_future(self._today(guild_id, user_id, now))
            try:
                history, earlier = await self._past(guild_id, user_id, today_day, together=True)
            except BaseException:
                today_job.cancel()
                raise
            today = await today_job
        if not (facts or today or history or earlier):
            return None
        budget = self._settings.context_token_budget
        key = (guild_id, user_id, "|".join(_digest(p) for p in (facts, today, history, earlier)))
        if (cached := self._merged.lookup(key)) is not None:
            return cached
        if not (today or history or earlier):
            merged = trim_to_tokens(facts, budget)  # nothing to merge: facts alone are the context
        else:
            merged = await self._merge(
                guild_id, user_id, facts=facts, today=today, history=history, earlier=earlier, now=now
            )
        if self._generations.of(guild_id) == generation:  # built from data that is still true
            self._merged[key] = merged
            self._last_good[(guild_id, user_id)] = merged
        return merged

    async def _today(self, guild_id: int, user_id: int, now: datetime) -> str:
        try:
            return (await self._summaries.today(guild_id, now)).get(user_id, "")
        except LLMError:
            log.warning("today's summaries unavailable in guild %s; serving what is known", guild_id)
            return ""

    async def _past(self, guild_id: int, user_id: int, today: date, *, together: bool = False) -> tuple[str, str]:
        """The last week's history and the earlier rollups (those stored: the rest is built behind); `together`
        reads the rollups beside the history (cold: the history may wait on the model)."""
        earlier_job = None
        if self._rollups is not None and together:
            earlier_job = asyncio.ensure_future(self._rollups.earlier(guild_id, user_id, today))
        history = ""
        try:
            history = await self._summaries.history(guild_id, user_id, today)
        except LLMError:
            log.warning("past days unavailable in guild %s; serving what is known", guild_id)
        except BaseException:
            if earlier_job is not None:
                earlier_job.cancel()
            raise
        if earlier_job is not None:
            return history, await earlier_job
        return history, await self._rollups.earlier(guild_id, user_id, today) if self._rollups is not None else ""

    async def _merge(
        self, guild_id: int, user_id: int, *, facts: str, today: str, history: str, earlier: str, now: datetime
    ) -> str:
        budget = self._settings.context_token_budget
        try:
            result = await self._llm.run(
                "merge_context",
                {
                    "subject": await self._names.name(guild_id, user_id),
                    **when(now, self._summaries.zone(guild_id)),
                    "facts": facts,
                    "current_day": today,
                    "history": history,
                    "earlier": earlier,
                    "max_tokens": budget,
                    "note_tokens": max(budget // 4, budget - estimate_tokens(f"Facts: {facts}")),
                },
                temperature=0.2,
                guild_id=guild_id,
                fallback=self._llm.is_offline,
            )
        except LLMError:
            return fallback_context(facts, today, history, earlier, budget=budget) or ""
        return with_facts(facts, result.text, budget)
