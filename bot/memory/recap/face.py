"""Recaps: "what did I miss?" answered from what memory keeps — the span's messages, split into threads, and the
daily summaries of its whole past days — with one model call per recap, shared and cached.

`gather` reads (no model): the request's channel, span and topic (span.py), the span's messages within the read
scope of the channel asked in (db/recap.py), their threads (threads.py), packed into RECAP_TOKEN_BUDGET with the
summaries of whole past days (material.py). Its extractive recap is ready at once. `phrase` makes the recap with
the model: one `recap` call for a given input, whoever asks and whenever, shared while it runs (single flight) and
kept (an LRU keyed by a digest of the input) until any change in the guild drops it.

The default span is "since you last spoke": in the channel the recap is about (else in the server), since the
asker's last message before the last one anyone else said there and before the quarter of an hour before asking —
so a greeting just before asking is arrival, not presence. No span reaches back more than RECAP_MAX_DAYS.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.client import LLM
from bot.llm.schemas import Recap
from bot.memory.caches import CacheReport, CountingLRU, drop_entries
from bot.memory.choices import Choices
from bot.memory.clock import Clock, day_bounds, local_day
from bot.memory.coherence import Generations
from bot.memory.flight import SingleFlight
from bot.memory.names import NameDirectory
from bot.memory.recap import material as packing
from bot.memory.recap import span
from bot.memory.recap.material import Material
from bot.memory.summaries.daily import Summaries
from bot.text import MENTION
from db import recap as rows
from db.scope import Scope
from db.search.types import Turn

log = logging.getLogger(__name__)
MAX_MESSAGES = 4000  # the newest a recap reads; beyond them the days' summaries tell the span
ON_LOOP = 300  # a span of more messages is threaded and packed off the event loop
ARRIVAL = timedelta(minutes=15)  # what the asker said this soon before asking is their arrival ("hi all, back!")
CACHED = 256


@dataclass(frozen=True, slots=True)
class RecapAsk:
    """A request for a recap: by whom, in which guild and channel (None: nowhere in particular), in which words,
    and its stored message."""

    guild_id: int
    author_id: int
    text: str
    here: int | None = None
    message_id: int | None = None


@dataclass(frozen=True, slots=True)
class Phrased:
    """A recap as told: by the model (or offline, by extraction), whether the model failed it (the extract then),
    and whether it came from the cache."""

    recap: Recap
    degraded: bool = False
    cached: bool = False


class Recaps:
    """Gathers what a recap is made from, and phrases it with one model call per input."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        llm: LLM | None,
        names: NameDirectory,
        choices: Choices,
        clock: Clock,
        summaries: Summaries | None,
        generations: Generations,
        budget_tokens: int,
        max_days: int,
        bot_name: str,
    ) -> None:
        self._sessions = sessions
        self._llm = llm
        self._names = names
        self._choices = choices
        self._clock = clock
        self._summaries = summaries
        self._generations = generations
        self._budget = budget_tokens
        self._max_days = max_days
        self._bot_name = bot_name
        self._told: CountingLRU[tuple[int, str], Recap] = CountingLRU(CACHED)
        self._flight = SingleFlight()

    def drop(self, guild_id: int) -> None:
        """Forget the guild's recaps (after any change: a deletion, an opt-out, a forgotten statement)."""
        drop_entries(self._told, guild_id)

    def cache_report(self) -> CacheReport:
        """Hit rate of the recaps kept."""
        return self._told.report()

    async def close(self) -> None:
        """Stop the model calls still running (what they would have made is made again when asked)."""
        await self._flight.stop()

    async def gather(self, asked: RecapAsk) -> Material:
        """What the recap asked for is made from (see the module docstring); never asks the model."""
        now = self._clock.now()
        zone = self._choices.zone(asked.guild_id)
        reading = span.read(asked.text, here=asked.here, now=now, zone=zone)
        longest = now - timedelta(days=self._max_days)
        scope = Scope(asked.guild_id, asked.here)
        async with self._sessions() as session:
            if reading.span is not None:
                (since, until), chosen = reading.span, "named"
            elif reading.topic:
                (since, until), chosen = (longest, now), "longest"
            else:
                spoke, chosen = await self._last_here(session, scope, asked.author_id, reading.channel_id, now)
                # After their own last message: what they said themselves is no news to them.
                since, until = spoke + timedelta(microseconds=1) if spoke else longest, now
            capped = since < longest
            since = max(since, longest)
            if (horizon := self._clock.horizon()) is not None:  # a replayed moment: nothing after it is said yet
                until = min(until, horizon)
            turns = await rows.span_messages(
                session, scope, since=since, until=until, channel_id=reading.channel_id, limit=MAX_MESSAGES
            )
        made = Material(asked.guild_id, reading.channel_id, since, until, chosen, reading.label, capped, reading.topic)
        return await self._made(made, turns, zone=zone, server=reading.channel_id is None)

    async def _made(self, made: Material, turns: list[Turn], *, zone: str, server: bool) -> Material:
        """`made` with the threads and days packed, their sources and provenance."""
        people = {t.user_id for t in turns} | {int(m) for t in turns for m in MENTION.findall(t.text)}
        names = await self._names.names(made.guild_id, people)
        days = await self._days(made.guild_id, made.since, made.until, zone) if server and not made.topic else []
        if summarised := {u for _, said in days for u in said} - people:
            names |= await self._names.names(made.guild_id, summarised)
        told_days = packing.pack_days(days, names, budget=self._budget // packing.DAYS_SHARE)
        budget = self._budget - packing.days_tokens(told_days)
        # Threading a busy day is ~0.1 s of Python: in a thread of its own, the event loop gets its turns meanwhile.
        span = partial(packing.from_span, turns, names, topic=made.topic, budget=budget)
        told, sources, said, raw = await asyncio.to_thread(span) if len(turns) > ON_LOOP else span()
        shown = list(sources.values())
        members = {t.user_id for t in shown} | {int(m) for t in shown for m in MENTION.findall(t.text)}
        members |= {u for d, said in days for u in said if any(x.day == d for x in told_days)}
        return replace(
            made,
            said=said,
            threads=tuple(told),
            days=tuple(told_days),
            sources=sources,
            members=frozenset(members),
            quoted=frozenset(t.message_id for t in shown),
            raw_tokens=raw,
        )

    async def _last_here(
        self, session: AsyncSession, scope: Scope, author: int, channel: int | None, now: datetime
    ) -> tuple[datetime | None, str]:
        """When the asker last spoke in the channel (else in the server): their newest message before the newest
        anyone else said there, and before the ARRIVAL before asking (what they said just before asking, "hi all,
        back!", is their arrival, even with others talking meanwhile). None: they never did."""
        places = ((channel, "here"), (None, "server")) if channel is not None else ((None, "server"),)
        for place, chosen in places:
            others = await rows.last_said(session, scope, before=now, channel_id=place, not_by=author)
            if others is None:
                continue
            before = min(others, now - ARRIVAL)
            mine = await rows.last_said(session, scope, before=before, channel_id=place, by=author)
            if mine is not None:
                return mine, chosen
        return None, "longest"

    async def _days(
        self, guild_id: int, since: datetime, until: datetime, zone: str
    ) -> list[tuple[date, dict[int, str]]]:
        """The stored summaries of the whole past days inside the span, newest first (never asks the model: a day
        not summarised yet is told by its messages alone)."""
        if self._summaries is None:
            return []
        today = local_day(self._clock.now(), zone)
        day, found = local_day(until, zone), []
        while day >= local_day(since, zone):
            start, end = day_bounds(day, zone)
            if day < today and start >= since and end <= until:
                stored = await self._summaries.stored_day(guild_id, day)
                if stored:
                    found.append((day, stored))
            day -= timedelta(days=1)
        return found

    async def phrase(self, made: Material) -> Phrased:
        """The recap of `made`: the model's (one call per input, shared and kept), or the extract when there is
        nothing to tell, no model at all, or the model failed."""
        if made.empty or self._llm is None:
            return Phrased(made.extract)
        key = (made.guild_id, made.digest)
        if (kept := self._told.lookup(key)) is not None:
            return Phrased(kept, cached=True)
        # A call begun before a change must not be joined after it: the generation is part of the key.
        flight = ("recap", *key, self._generations.of(made.guild_id))
        return await self._flight.run(flight, lambda: self._ask(made, key))

    async def _ask(self, made: Material, key: tuple[int, str]) -> Phrased:
        assert self._llm is not None
        generation = self._generations.of(made.guild_id)
        result = await self._llm.run(
            "recap",
            made.variables(self._bot_name),
            schema=Recap,
            role="fast",
            temperature=0.3,
            guild_id=made.guild_id,
        )
        parsed = result.parsed if isinstance(result.parsed, Recap) else None
        if parsed is None or result.refused:
            return Phrased(made.extract, degraded=True)
        told = checked(parsed, made)
        if not result.degraded and self._generations.of(made.guild_id) == generation:
            self._told[key] = told
        return Phrased(told, degraded=result.degraded)


def checked(recap: Recap, made: Material) -> Recap:
    """The model's recap, keeping only threads it was shown and refs that stand for a message shown."""
    numbers = {t.number for t in made.threads}
    kept = []
    for item in recap.threads:
        if item.thread not in numbers:
            continue
        refs = list(dict.fromkeys(r for r in item.refs if r in made.sources))
        kept.append(item.model_copy(update={"refs": refs}))
    return Recap(threads=kept)
