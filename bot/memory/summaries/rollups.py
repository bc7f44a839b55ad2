"""Weekly and monthly rollups: a member's time beyond the last seven days, kept short.

Built lazily from the daily summaries of the period (one `historical_summary` call per member and period,
the same prompt as days 2–7), and persisted: a period that is over never changes, so it is summarised once.
The past never slows a reply: a context uses the rollups already stored, and what is missing is built in
the background (with a model; offline it is instant, so it is built at once) for the next context.
The originals stay; a deletion drops every rollup whose period holds an affected day (db/deletion.py).
"""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.lifecycle import keep
from bot.llm.client import LLM
from bot.llm.types import LLMError
from bot.memory.caches import CountingLRU, drop_entries
from bot.memory.clock import Clock, history_days
from bot.memory.coherence import Generations
from bot.memory.flight import SingleFlight
from bot.memory.names import NameDirectory
from bot.memory.summaries.claims import Claims
from bot.memory.summaries.daily import Summaries
from db import changes
from db import summaries as store
from db.summaries import Period

WEEKS = 3  # at least this many complete ISO weeks before the last-week window
MONTHS = 2  # complete calendar months before those weeks
AT_ONCE = 2  # days a rollup builds at once: it is background work, and replies share the database and model
BUILDING = "rollups for a member of guild"  # the background work's name, then the guild's id


def periods(today: date, *, weeks: int = WEEKS, months: int = MONTHS) -> tuple[list[Period], list[date]]:
    """The rollup periods for a context built on `today` (oldest first, all over), and the loose days.

    Weeks reach back to the week holding the 1st of the month where the last of `weeks` weeks starts, so
    weeks and months leave no gap; the few days between the newest complete week and the last-week window
    (days 2–7) are returned as loose days, whose daily summaries are used as they are.
    """
    boundary = history_days(today)[0]  # days 2–7 belong to the last-week history
    week_end = boundary - timedelta(days=boundary.weekday())  # the Monday on or before the boundary
    loose = [week_end + timedelta(days=k) for k in range((boundary - week_end).days)]
    month_start = (week_end - timedelta(days=7 * weeks)).replace(day=1)
    spans: list[Period] = []
    while not spans or spans[-1].start > month_start:
        end = spans[-1].start if spans else week_end
        spans.append(Period("week", end - timedelta(days=7), end))
    month_end = month_start
    for _ in range(months):
        start = (month_end - timedelta(days=1)).replace(day=1)
        spans.append(Period("month", start, month_end))
        month_end = start
    return sorted(spans, key=lambda p: p.start), loose


def label(period: Period) -> str:
    """'Week of 2026-10-12' or 'September 2026'."""
    return f"Week of {period.start}" if period.kind == "week" else f"{period.start:%B %Y}"


class Rollups:
    """Reads, builds and caches rollups; the cache drops a guild with the other caches after deletions."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        summaries: Summaries,
        llm: LLM,
        names: NameDirectory,
        clock: Clock,
        *,
        generations: Generations | None = None,
        claims: Claims | None = None,
    ) -> None:
        self._sessions = sessions
        self._claims = claims or Claims(sessions, enabled=False, lease=60.0)
        self._summaries = summaries
        self._llm = llm
        self._names = names
        self._clock = clock
        self._generations = generations or Generations()
        self._cache: CountingLRU[tuple[int, int, str, date], str] = CountingLRU(65536)
        self._flight = SingleFlight()

    def drop(self, guild_id: int) -> None:
        drop_entries(self._cache, guild_id)

    async def close(self) -> None:
        """Stop background builds (what they finished is stored; the rest is built next time)."""
        await self._flight.stop()

    async def earlier(self, guild_id: int, user_id: int, today: date, *, wait: bool = False) -> str:
        """'September 2026: …  Week of …: …  On …: …' for the member, oldest first; "" when nothing is known.

        What is not stored yet is built in the background, or now with `wait` (or offline, where it is free).
        """
        text, complete = await self._assemble(guild_id, user_id, today, build=False)
        if complete:
            return text
        job = self._flight.start(
            (guild_id, user_id, today, self._generations.of(guild_id)),
            lambda: self._assemble(guild_id, user_id, today, build=True),
        )
        if wait or self._llm.is_offline:
            return (await asyncio.shield(job))[0]
        keep(job, name=f"{BUILDING} {guild_id}")
        return text

    async def _assemble(self, guild_id: int, user_id: int, today: date, *, build: bool) -> tuple[str, bool]:
        """The text from what is known (building what is missing if `build`), and whether nothing was missing."""
        spans, loose = periods(today)
        parts, complete = [], True
        for period in spans:
            text = await self.rollup(guild_id, user_id, period, build=build)
            complete &= text is not None
            if text:
                parts.append(f"{label(period)}: {text}")
        if build:
            found: list[dict[int, str] | None] = list(await self._summaries.past_days(guild_id, loose, at_once=AT_ONCE))
        else:
            found = [await self._summaries.stored_day(guild_id, day) for day in loose]
        for day, summaries in zip(loose, found, strict=True):
            complete &= summaries is not None
            if text := (summaries or {}).get(user_id, ""):
                parts.append(f"On {day}: {text}")
        return " ".join(parts), complete

    async def rollup(self, guild_id: int, user_id: int, period: Period, *, build: bool = True) -> str | None:
        """One member's period: cache, then SQL, else (if `build`) built from the daily summaries and stored.

        None: not stored, and not built (not asked to, or the model failed: it is tried again next time).
        """
        key = (guild_id, user_id, period.kind, period.start)
        if (cached := self._cache.lookup(key)) is not None:
            return cached
        generation = self._generations.of(guild_id)
        async with self._sessions() as session:
            stored = await store.stored_rollup(session, guild_id, user_id, period)
            seen = await changes.latest(session, guild_id) if stored is None and build else 0
        if stored is None and build:  # one process asks the model; others wait for what it stores
            stored = await self._claims.once(
                (period.kind, guild_id, user_id, period.start),
                load=lambda: self._stored(guild_id, user_id, period),
                build=lambda: self._build(guild_id, user_id, period, seen, generation),
            )
        if stored is not None and self._generations.of(guild_id) == generation:
            self._cache[key] = stored
        return stored

    async def _stored(self, guild_id: int, user_id: int, period: Period) -> str | None:
        async with self._sessions() as session:
            return await store.stored_rollup(session, guild_id, user_id, period)

    async def _build(self, guild_id: int, user_id: int, period: Period, seen: int, generation: int) -> str | None:
        """Summarise a member's period; stored only when it says something (a quiet period is remembered in
        this process only, so nothing is written about a member who is gone) and no change came since `seen`."""
        days = [period.start + timedelta(days=k) for k in range((period.end - period.start).days)]
        try:
            found = await self._summaries.past_days(guild_id, days, at_once=AT_ONCE)
        except LLMError:
            return None
        dailies = [(d.isoformat(), text) for d, day in zip(days, found, strict=True) if (text := day.get(user_id, ""))]
        text, model = "", ""
        if dailies:
            result = await self._summaries.summarise_days(guild_id, user_id, dailies)
            if result is None:
                return None
            text, model = result.text.strip(), result.model
        if not text:
            return text

        async def save(session: AsyncSession) -> None:
            await store.save_rollup(
                session,
                guild_id,
                user_id,
                period,
                text,
                model=model,
                version=self._llm.version("historical_summary"),
                at=self._clock.now(),
            )

        await self._summaries.store_if_unchanged(guild_id, generation, seen, save)
        return text
