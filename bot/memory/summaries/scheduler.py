"""Summaries before they are needed: finished days are summarised in the background, not on a reply's path.

Without this, the first context of a day paid for yesterday's batch call (and day one of a guild, after an
import, for the whole week) while a member waited. The scheduler summarises each active guild's finished day
at its local midnight plus a random jitter (so guilds and processes sharing a time zone do not all call the
model at 00:00), and at start, and every hour, the backlog: every day a context can reach (the week and the
rollups' weeks and months) that has messages and no stored summary — newest first, interleaved across
guilds, SUMMARY_CONCURRENCY at a time. A day that fails is logged once with its cause and tried again at the
next pass; it never holds up the others. While the model's breaker is open the pass stops (the breaker has
said why) and resumes at the next one.

It only asks `Summaries.build_day`, so everything that protects a build holds here too: one build per day in
the process (single flight) and across processes (claims on PostgreSQL), and a deletion that lands during a
build wins (the guild's generation and change log are checked before anything is stored).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.faults import Fault, describe, storage_trouble
from bot.lifecycle import spawn
from bot.llm.types import LLMError, LLMUnavailableError
from bot.memory.clock import Clock, day_bounds, local_day
from bot.memory.summaries.daily import Summaries
from bot.memory.summaries.rollups import periods
from db import summaries as store

log = logging.getLogger(__name__)
SOURCE = "summary scheduler"
START_DELAY_SECONDS = 5.0  # start-up (connecting, replaying spill files) goes first
RESCAN_SECONDS = 3600.0  # the backlog is looked at again this often (imports by other processes, edits)
RETRY_SECONDS = 300.0  # after a pass the model cut short
MAX_SLEEP_SECONDS = 60.0  # a new guild, a changed time zone or a moved clock is noticed within this


def reach(today: date) -> int:
    """How many days back a context built today can use a daily summary (rollups included)."""
    spans, _ = periods(today)
    return (today - min(p.start for p in spans)).days


@dataclass
class Pass:
    """What one pass did."""

    built: int = 0  # guild-days summarised (or found stored by another process meanwhile)
    failed: int = 0
    quiet: int = 0  # days without anything to summarise
    stopped: bool = False  # the model's breaker was open, or storage away: the rest waits for the next pass
    storage_away: bool = False  # a build met storage away (reported as a storage fault, not per day)
    seconds: float = 0.0


class SummaryScheduler:
    """Runs in the background of a long-running process (the bot, the console); `catch_up` is one pass."""

    def __init__(
        self,
        summaries: Summaries,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        *,
        concurrency: int,
        jitter_seconds: float,
        fault: Fault | None = None,
    ) -> None:
        self._fault = fault or Fault("storage")
        self._summaries = summaries
        self._sessions = sessions
        self._clock = clock
        self._concurrency = concurrency
        self._jitter = jitter_seconds
        self._guilds: set[int] = set()
        self._ran: dict[int, date] = {}  # per guild: the local day of its last pass (its finished days are done)
        self._due: dict[int, tuple[date, datetime]] = {}  # per guild: today, and when today's run is due
        self._failing: set[tuple[int, date]] = set()  # failures already logged
        self._task: asyncio.Task[None] | None = None
        self.passes: list[Pass] = []

    def note_guild(self, guild_id: int) -> None:
        """A guild spoke (the ingest path: a set insertion); a guild new to the process gets its backlog built."""
        self._guilds.add(guild_id)

    def start(self) -> None:
        """Begin in the background; `close` stops it."""
        if self._task is None:
            self._task = spawn(self._run(), name="summary scheduler")

    async def close(self) -> None:
        """Stop, cancelling the builds in flight (what they stored stays; the rest is built next time)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def due(self, now: datetime) -> list[int]:
        """Guilds whose local midnight (plus their jitter) has passed since their last pass."""
        return [g for g in sorted(self._guilds) if (at := self._due_at(g, now)) is not None and at <= now]

    def _due_at(self, guild_id: int, now: datetime) -> datetime | None:
        zone = self._summaries.zone(guild_id)
        today = local_day(now, zone)
        if self._ran.get(guild_id) == today:
            return None
        entry = self._due.get(guild_id)
        if entry is None or entry[0] != today:
            at = day_bounds(today, zone)[0] + timedelta(seconds=random.uniform(0, self._jitter))
            self._due[guild_id] = entry = (today, at)
        return entry[1]

    async def _run(self) -> None:
        await asyncio.sleep(START_DELAY_SECONDS)
        next_scan = 0.0
        while True:
            try:
                done = Pass()
                if time.monotonic() >= next_scan:
                    done = await self.catch_up()
                    next_scan = time.monotonic() + (RETRY_SECONDS if done.stopped else RESCAN_SECONDS)
                elif due := self.due(self._clock.now()):
                    done = await self.catch_up(due)
            except (SQLAlchemyError, OSError) as exc:  # the database is away: the next pass tries again
                self._fault.failed(exc, source=SOURCE)
                next_scan = time.monotonic() + RETRY_SECONDS
            else:
                if not done.storage_away:
                    self._fault.ok(SOURCE)
            await asyncio.sleep(self._sleep(self._clock.now()))

    def _sleep(self, now: datetime) -> float:
        upcoming = [at for g in self._guilds if (at := self._due_at(g, now)) is not None]
        soonest = min(((at - now).total_seconds() for at in upcoming), default=MAX_SLEEP_SECONDS)
        return min(MAX_SLEEP_SECONDS, max(1.0, soonest))

    async def catch_up(self, guilds: Iterable[int] | None = None, *, now: datetime | None = None) -> Pass:
        """Summarise every finished day a context can reach that has messages and no stored summary, in the
        given guilds (default: every guild with messages), newest first; returns what was done."""
        started = time.perf_counter()
        now = now or self._clock.now()
        if guilds is None:
            async with self._sessions() as session:
                self._guilds.update(await store.guilds(session))
            guilds = self._guilds
        jobs: list[tuple[int, int, date]] = []  # (age in days, guild, day)
        for guild_id in sorted(guilds):
            self._ran[guild_id] = local_day(now, self._summaries.zone(guild_id))
            jobs += [((self._ran[guild_id] - day).days, guild_id, day) for day in await self._missing(guild_id, now)]
        jobs.sort()
        done = Pass()
        queue = iter(jobs)

        async def worker() -> None:
            for _, guild_id, day in queue:  # one shared iterator: each job is taken by one worker
                if done.stopped:
                    return
                await self._day(guild_id, day, done)

        await asyncio.gather(*(worker() for _ in range(self._concurrency)))
        done.seconds = time.perf_counter() - started
        self.passes.append(done)
        del self.passes[:-10]
        if done.built or done.failed:
            log.info(
                "summarised %d finished guild-days in %.1f s (%d failed%s)",
                done.built,
                done.seconds,
                done.failed,
                "; storage is away, the rest waits"
                if done.storage_away
                else "; the model is cooling down, the rest waits"
                if done.stopped
                else "",
            )
        return done

    async def _missing(self, guild_id: int, now: datetime) -> list[date]:
        """The guild's finished days within reach, newest first, that no summary covers yet."""
        today = local_day(now, self._summaries.zone(guild_id))
        oldest = today - timedelta(days=reach(today))
        async with self._sessions() as session:
            first = await store.first_message_at(session, guild_id)
            if first is None:
                return []
            oldest = max(oldest, local_day(first, self._summaries.zone(guild_id)))
            stored = await store.summarised_days(session, guild_id, oldest)
        days = (today - timedelta(days=k) for k in range(1, (today - oldest).days + 1))
        return [day for day in days if day not in stored]

    async def _day(self, guild_id: int, day: date, done: Pass) -> None:
        start, end = day_bounds(day, self._summaries.zone(guild_id))
        try:
            async with self._sessions() as session:
                if not await store.has_messages(session, guild_id, start, end):
                    done.quiet += 1
                    return
            await self._summaries.build_day(guild_id, day)
        except LLMUnavailableError:
            done.stopped = True  # the breaker logged why; hammering it would only postpone its recovery
        except LLMError as exc:
            done.failed += 1
            self._failed(guild_id, day, str(exc))
        except (SQLAlchemyError, OSError) as exc:
            done.failed += 1
            if storage_trouble(exc):  # the database's state, not this day's: one line for the outage
                self._fault.failed(exc, source=SOURCE)
                done.stopped = done.storage_away = True
            else:
                self._failed(guild_id, day, describe(exc))
        else:
            done.built += 1
            self._failing.discard((guild_id, day))

    def _failed(self, guild_id: int, day: date, cause: str) -> None:
        if (guild_id, day) in self._failing:
            log.debug("summarising guild %s day %s failed again: %s", guild_id, day, cause)
            return
        self._failing.add((guild_id, day))
        log.warning("could not summarise guild %s day %s (tried again at the next pass): %s", guild_id, day, cause)
