"""Track 2, summaries: one batch call per guild-day, past days persisted, days 2–7 as a history."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import date, datetime
from typing import TypeVar
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.client import LLM
from bot.llm.prompts import ChatLine, transcript, when, xml_text
from bot.llm.schemas import DailySummaries
from bot.llm.tokens import estimate_tokens, trim_to_chars
from bot.llm.types import LLMError, LLMResult
from bot.memory.caches import CacheReport, CountingLRU, CountingTTL, drop_entries
from bot.memory.clock import Clock, day_bounds, history_days, local_day
from bot.memory.coherence import Generations
from bot.memory.flight import SingleFlight
from bot.memory.names import NameDirectory, unnamed
from bot.memory.summaries.claims import Claims
from bot.settings import Settings
from bot.text import MENTION
from db import changes
from db import summaries as store

log = logging.getLogger(__name__)
T = TypeVar("T")
HOUR = 3600
SUMMARY_CHARS = 600  # a chunked day's per-user results are merged up to this length
DAYS_AT_ONCE = 4  # past days a context builds concurrently (the model's lane caps what is really in flight)


class Summaries:
    """Daily summaries (today refreshed hourly; past days immutable) and per-member histories."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        llm: LLM,
        names: NameDirectory,
        settings: Settings,
        clock: Clock,
        *,
        generations: Generations | None = None,
        claims: Claims | None = None,
        zone: Callable[[int], str] | None = None,
    ) -> None:
        self._sessions = sessions
        self._generations = generations or Generations()
        self._claims = claims or Claims(sessions, enabled=False, lease=settings.summary_lease_seconds)
        self._llm = llm
        self._names = names
        self._settings = settings
        self._clock = clock
        # cachetools sits in front of SQL, never instead of it; its timer is our clock, so tests never sleep.
        self._today: CountingTTL[tuple[int, str], dict[int, str]] = CountingTTL(1024, HOUR, timer=clock.monotonic)
        self._past: CountingLRU[tuple[int, date], dict[int, str]] = CountingLRU(4096)
        self._history: CountingLRU[tuple[int, int, date], str] = CountingLRU(65536)
        self._flight = SingleFlight()
        self.batch_calls = 0
        self._zone = zone or (lambda _guild_id: settings.default_timezone)  # bot/memory/choices.py owns zones

    async def close(self) -> None:
        """Stop the builds still running (what they finished is stored; the rest is built next time)."""
        await self._flight.stop()

    def drop(self, guild_id: int) -> None:
        """Forget every cached summary of a guild (after a deletion; SQL is the source of truth)."""
        for cache in (self._today, self._past, self._history):
            drop_entries(cache, guild_id)

    def cache_reports(self) -> dict[str, CacheReport]:
        """Hit rates of today's (hourly), past days' and histories' caches."""
        return {"today": self._today.report(), "past days": self._past.report(), "history": self._history.report()}

    def zone(self, guild_id: int) -> str:
        """The guild's time zone: its own setting, else DEFAULT_TIMEZONE."""
        return self._zone(guild_id)

    def _today_key(self, guild_id: int, now: datetime) -> tuple[int, str]:
        return (guild_id, now.astimezone(ZoneInfo(self.zone(guild_id))).strftime("%Y-%m-%d-%H"))

    def cached_today(self, guild_id: int, now: datetime) -> dict[int, str] | None:
        """Today's summaries if this hour's are cached (None: `today` would compute them)."""
        key = self._today_key(guild_id, now)
        return self._today.get(key)

    async def today(self, guild_id: int, now: datetime) -> dict[int, str]:
        """Today's summaries so far, recomputed at most once per clock hour."""
        key = self._today_key(guild_id, now)
        if (cached := self._today.lookup(key)) is not None:
            return cached
        # A build begun before a change must not be joined after it: the generation is part of every key.
        flight = ("today", *key, self._generations.of(guild_id))
        return await self._flight.run(flight, lambda: self._compute_today(guild_id, now, key))

    async def _compute_today(self, guild_id: int, now: datetime, key: tuple[int, str]) -> dict[int, str]:
        generation = self._generations.of(guild_id)
        day = local_day(now, self.zone(guild_id))
        start, _ = day_bounds(day, self.zone(guild_id))
        summaries, degraded = await self._summarise(guild_id, day, start, now, fallback=True)
        if not degraded and self._generations.of(guild_id) == generation:  # nothing changed meanwhile
            self._today[key] = summaries
        return summaries

    async def past_day(self, guild_id: int, day: date) -> dict[int, str]:
        """A finished day's summaries: LRU, then SQL, else one batch call whose result is persisted."""
        if (cached := self._past.lookup((guild_id, day))) is not None:
            return cached
        flight = ("day", guild_id, day, self._generations.of(guild_id))
        return await self._flight.run(flight, lambda: self._load_or_compute_day(guild_id, day))

    async def build_day(self, guild_id: int, day: date) -> dict[int, str]:
        """A finished day's summaries from SQL, else made now (the scheduler): unlike `past_day`, never trusts
        this process's cache, which may remember a day as empty from before an import filled it."""
        flight = ("day", guild_id, day, self._generations.of(guild_id))
        return await self._flight.run(flight, lambda: self._load_or_compute_day(guild_id, day))

    async def past_days(
        self, guild_id: int, days: Sequence[date], *, at_once: int = DAYS_AT_ONCE
    ) -> list[dict[int, str]]:
        """Several finished days, those not known yet built `at_once` at a time rather than one after another.

        A failure (LLMError) is raised once every day has finished: what the others made is stored and cached.
        """
        found: dict[date, dict[int, str]] = {}
        for day in days:  # the warm path: every day cached, no task is made
            with contextlib.suppress(KeyError):
                found[day] = self._past[(guild_id, day)]
        missing = [day for day in days if day not in found]
        if missing:
            gate = asyncio.Semaphore(at_once)

            async def one(day: date) -> dict[int, str]:
                async with gate:
                    return await self.past_day(guild_id, day)

            results = await asyncio.gather(*(one(day) for day in missing), return_exceptions=True)
            for day, result in zip(missing, results, strict=True):
                if isinstance(result, BaseException):
                    raise result
                found[day] = result
        return [found[day] for day in days]

    async def stored_day(self, guild_id: int, day: date) -> dict[int, str] | None:
        """A finished day's summaries if they were made already (LRU, then SQL); None: never asks the model."""
        if (cached := self._past.lookup((guild_id, day))) is not None:
            return cached
        generation = self._generations.of(guild_id)
        async with self._sessions() as session:
            stored = await store.stored_day(session, guild_id, day)
        if stored is not None and self._generations.of(guild_id) == generation:
            self._past[(guild_id, day)] = stored
        return stored

    async def _load_or_compute_day(self, guild_id: int, day: date) -> dict[int, str]:
        generation = self._generations.of(guild_id)
        start, end = day_bounds(day, self.zone(guild_id))
        async with self._sessions() as session:
            stored = await store.stored_day(session, guild_id, day)
            if stored is None:
                seen = await changes.latest(session, guild_id)  # before the day is read: a change after it wins
                rows = await store.day_messages(session, guild_id, start, end)
        if stored is None and not rows:
            stored = {}  # nothing to summarise: no claim, no call
        elif stored is None:  # one process summarises the day; others wait for what it stores
            stored = await self._claims.once(
                ("day", guild_id, day),
                load=lambda: self._stored_in_sql(guild_id, day),
                build=lambda: self._build_day(guild_id, day, rows, seen),
            )
        if self._generations.of(guild_id) == generation:
            self._past[(guild_id, day)] = stored
        return stored

    async def _stored_in_sql(self, guild_id: int, day: date) -> dict[int, str] | None:
        async with self._sessions() as session:
            return await store.stored_day(session, guild_id, day)

    async def _build_day(
        self, guild_id: int, day: date, rows: list[tuple[datetime, int, str]], seen: int
    ) -> dict[int, str]:
        summaries, _ = await self._summarise_rows(guild_id, day, rows, fallback=False, persist=True, seen=seen)
        return summaries

    async def history(self, guild_id: int, user_id: int, today: date) -> str:
        """Days 2–7 for one member: a dated historical summary, or the daily summaries themselves."""
        days = history_days(today)
        generation = self._generations.of(guild_id)  # before the inputs: a change after them makes them stale
        found = await self.past_days(guild_id, days)
        dailies = [(d.isoformat(), text) for d, day in zip(days, found, strict=True) if (text := day.get(user_id, ""))]
        if not dailies:
            return ""
        joined = " ".join(f"On {d}: {text}" for d, text in dailies)
        if self._settings.history_mode == "daily":
            return joined
        key = (guild_id, user_id, today)
        if (cached := self._history.lookup(key)) is not None:
            return cached
        return await self._flight.run(
            ("history", *key, generation), lambda: self._compute_history(key, dailies, joined, generation)
        )

    async def _compute_history(
        self, key: tuple[int, int, date], dailies: list[tuple[str, str]], joined: str, generation: int
    ) -> str:
        guild_id, user_id, end = key
        async with self._sessions() as session:
            stored = await store.stored_history(session, guild_id, user_id, end)
            seen = await changes.latest(session, guild_id) if stored is None else 0
        if self._generations.of(guild_id) != generation:
            return joined  # the days changed while they were read: nothing of this is stored or cached
        if stored is None:  # one process asks the model; others wait for what it stores
            stored = await self._claims.once(
                ("history", *key),
                load=lambda: self._stored_history(key),
                build=lambda: self._history_call(key, dailies, generation, seen),
            )
        if stored is None:  # the model failed: not stored, tried again next time
            return trim_to_chars(joined, 2 * SUMMARY_CHARS, keep="end")
        if self._generations.of(guild_id) == generation:
            self._history[key] = stored
        return stored

    async def _stored_history(self, key: tuple[int, int, date]) -> str | None:
        async with self._sessions() as session:
            return await store.stored_history(session, *key)

    async def _history_call(
        self, key: tuple[int, int, date], dailies: list[tuple[str, str]], generation: int, seen: int
    ) -> str | None:
        """The model's history of the days, stored unless the guild changed after change `seen`; None when the
        model failed (nothing stored: it is tried again next time)."""
        guild_id, user_id, end = key
        result = await self.summarise_days(guild_id, user_id, dailies)
        if result is None:
            return None
        text = result.text.strip()

        async def save(session: AsyncSession) -> None:
            await store.save_history(
                session,
                guild_id,
                user_id,
                end,
                text,
                model=result.model,
                version=self._llm.version("historical_summary"),
                at=self._clock.now(),
            )

        await self.store_if_unchanged(guild_id, generation, seen, save)
        return text

    async def summarise_days(self, guild_id: int, user_id: int, dailies: list[tuple[str, str]]) -> LLMResult | None:
        """A member's run of daily summaries as one text (the last week, a week, a month); None: the model failed."""
        try:
            return await self._llm.run(
                "historical_summary",
                {
                    "subject": await self._names.name(guild_id, user_id),
                    "start_day": dailies[0][0],
                    "end_day": dailies[-1][0],
                    "days_xml": "\n".join(f'<day date="{d}">{xml_text(text)}</day>' for d, text in dailies),
                    "days": dailies,
                    **when(self._clock.now(), self.zone(guild_id)),
                },
                role="batch",
                temperature=0.3,
                guild_id=guild_id,
                fallback=self._llm.is_offline,
            )
        except LLMError:
            return None

    async def store_if_unchanged(
        self, guild_id: int, generation: int, seen: int, save: Callable[[AsyncSession], Awaitable[None]]
    ) -> None:
        """Run `save` in one transaction unless the guild changed (here or in another process) since its inputs
        were read (`generation` here, change `seen` in the log): stale input is never stored."""
        async with self._sessions() as session, session.begin():
            if self._generations.of(guild_id) == generation and await changes.unchanged(session, guild_id, seen):
                await save(session)

    async def _summarise(
        self,
        guild_id: int,
        day: date,
        start: datetime,
        end: datetime,
        *,
        fallback: bool,
        persist: bool = False,
        seen: int = 0,
    ) -> tuple[dict[int, str], bool]:
        """One guild-day summarised; with `persist`, stored unless the guild changed after change `seen`."""
        async with self._sessions() as session:
            rows = await store.day_messages(session, guild_id, start, end)
        return await self._summarise_rows(guild_id, day, rows, fallback=fallback, persist=persist, seen=seen)

    async def _summarise_rows(
        self,
        guild_id: int,
        day: date,
        rows: list[tuple[datetime, int, str]],
        *,
        fallback: bool,
        persist: bool = False,
        seen: int = 0,
    ) -> tuple[dict[int, str], bool]:
        if not rows:
            return {}, False
        lines = await self.lines(guild_id, rows)
        summaries: dict[int, list[str]] = {}
        degraded = False
        model = ""
        for chunk in self._chunks(lines):
            self.batch_calls += 1
            result = await self._llm.run(
                "daily_summary",
                {
                    "guild_name": str(guild_id),
                    "day": day.isoformat(),
                    "timezone": self.zone(guild_id),
                    "transcript_xml": transcript(chunk),
                    "lines": chunk,
                },
                schema=DailySummaries,
                role="batch",
                temperature=0.3,
                guild_id=guild_id,
                fallback=fallback or self._llm.is_offline,
            )
            degraded |= result.degraded
            model = result.model
            authors = {line.author_id for line in chunk}
            parsed = result.parsed if isinstance(result.parsed, DailySummaries) else DailySummaries(summaries=[])
            for item in parsed.summaries:
                if item.user_id.isdigit() and int(item.user_id) in authors:  # ignore IDs the model made up
                    summaries.setdefault(int(item.user_id), []).append(item.summary.strip())
            for author in authors:  # a refused (blocked) day is stored empty, so it is not retried forever
                summaries.setdefault(author, [])
        merged = {user: trim_to_chars(" ".join(parts), SUMMARY_CHARS) for user, parts in summaries.items()}
        if persist and not degraded and merged:
            async with self._sessions() as session, session.begin():
                if not await changes.unchanged(session, guild_id, seen):
                    return merged, degraded  # a deletion since the build began: never write it back
                await store.save_day(
                    session,
                    guild_id,
                    day,
                    merged,
                    model=model,
                    version=self._llm.version("daily_summary"),
                    at=self._clock.now(),
                )
        return merged, degraded

    async def lines(self, guild_id: int, rows: list[tuple[datetime, int, str]]) -> list[ChatLine]:
        """Stored rows as transcript lines: authors and mentions by name (never pinging anyone)."""
        mentioned = {int(m) for _, _, text in rows for m in MENTION.findall(text)}
        names = await self._names.names(guild_id, {user for _, user, _ in rows} | mentioned)

        def name(user_id: int) -> str:
            return names.get(user_id, unnamed(user_id))

        return [
            ChatLine(ts, user, name(user), MENTION.sub(lambda m: "@" + name(int(m.group(1))), text))
            for ts, user, text in rows
        ]

    def _chunks(self, lines: list[ChatLine]) -> list[list[ChatLine]]:
        budget = self._settings.daily_input_tokens
        chunks: list[list[ChatLine]] = [[]]
        used = 0
        for line in lines:
            cost = estimate_tokens(line.content) + 20  # the element markup and names
            if chunks[-1] and used + cost > budget:
                chunks.append([])
                used = 0
            chunks[-1].append(line)
            used += cost
        return chunks
