"""Catch-up from Discord: what was said while the bot was away is read back from each channel's history.

A crash loses what the write-behind queue held, and nothing said while the bot is stopped (a deploy, a restart,
an outage) reaches it through the gateway. Discord keeps the log, so on READY and on RESUMED each readable text
channel and active thread is read from CATCHUP_VERIFY_HOURS before its newest stored message (the verified span:
edits made meanwhile are seen, and a stored message of the span that Discord no longer has was deleted meanwhile
and is deleted here) and at most CATCHUP_HOURS back, oldest first, and every message goes through the listener's
own storing path (kinds, channel scope, opt-outs, names) without being answered. Storage makes a replay harmless
(upserts by message id, a newer edit wins, tombstones keep deletions deleted).

A catch-up is a job that finishes: a channel whose history or storage fails keeps how far it got (the last message
read, the ids seen) and is tried again, with backoff, until every channel's span is read — storage away or Discord
failing only pauses it, in one log line per state. After a restart it starts again from the newest stored message,
which is where the last one got to. Discord refusing a channel (403, 404: access taken away, channel gone) drops
that channel. One catch-up runs at a time (a READY during one asks for another pass after it); channels are read
one at a time, so discord.py's rate limiting paces it, in the background: replies never wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import discord

from bot.faults import describe, storage_trouble
from bot.lifecycle import spawn
from bot.memory.intake.face import Intake

log = logging.getLogger(__name__)
CHANNEL_SECONDS = 300.0  # the most one channel's history may take in one try; the others go on after it
RETRY_SECONDS = (1.0, 60.0)  # the first and the longest wait before a paused catch-up tries again
Store = Callable[[discord.Message], Awaitable[bool]]


@dataclass(eq=False)
class Span:
    """One channel's part of a catch-up, and how far it got."""

    channel: Any
    guild_id: int
    start: int | None = None  # read after this id; None: not planned yet (the newest stored is not read yet)
    newest: int | None = None  # the newest stored when planned: the verified span is (start, newest]
    reached: int = 0  # the last id read: a try after a failure goes on from here
    seen: set[int] = field(default_factory=set)
    read_all: bool = False  # Discord answered the whole span (deletions may be applied)
    failed: int = 0


@dataclass
class Tally:
    """What one catch-up did, for its closing line."""

    read: int = 0
    deleted: int = 0
    retries: int = 0
    dropped: int = 0
    paused: bool = False  # storage is away: said once, and once when it goes on


class CatchUp:
    """Reads back what the bot missed, guild by guild, channel by channel, until every span is read."""

    def __init__(self, bot: Any, store: Store, intake: Intake, *, hours: float, verify_hours: float) -> None:
        self._bot = bot
        self._store = store
        self._intake = intake
        self._hours = hours
        self._verify = timedelta(hours=min(verify_hours, hours))
        self.retry_seconds = RETRY_SECONDS
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def request(self) -> None:
        """Catch up now (on READY, on RESUMED); if one is running, once more after it."""
        if self._hours <= 0:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = spawn(self._run(), name="elefant-catch-up")

    async def wait(self) -> None:
        """Return once no catch-up is running (tests)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def cancel(self) -> None:
        """Stop at a stop: what was read back so far is queued and stored with the rest."""
        self._again = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            self._again = False
            await self._job([Span(c, g.id) for g in list(self._bot.guilds) for c in _readable(g)])
            if not self._again:
                return

    async def _job(self, spans: list[Span]) -> None:
        """Read every span, trying the ones that failed again with backoff until none is left."""
        since = datetime.now(UTC) - timedelta(hours=self._hours)
        guilds = len({s.guild_id for s in spans})
        log.info("catching up on %d channels of %d guilds (at most %g hours back)", len(spans), guilds, self._hours)
        tally, wait = Tally(), self.retry_seconds[0]
        while left := [s for s in spans if not s.read_all]:
            await self._round(left, since, tally)
            if any(not s.read_all for s in spans):
                tally.retries += 1
                await asyncio.sleep(wait * random.uniform(0.5, 1.0))
                wait = min(wait * 2, self.retry_seconds[1])
        log.info(
            "caught up on %d channels: %d messages read back, %d deleted meanwhile%s%s",
            len(spans) - tally.dropped,
            tally.read,
            tally.deleted,
            f", after {tally.retries} retries" if tally.retries else "",
            f"; {tally.dropped} channels Discord refused" if tally.dropped else "",
        )

    async def _round(self, spans: list[Span], since: datetime, tally: Tally) -> None:
        """Try each span once; storage away pauses the round (every channel would fail alike)."""
        try:
            await self._plan([s for s in spans if s.start is None], since)
            for span in spans:
                if await self._try(span, tally):
                    self._resumed(tally)
        except Exception as exc:
            if not storage_trouble(exc):
                raise
            if not tally.paused:
                left = sum(not s.read_all for s in spans)
                log.warning(
                    "catching up paused: storage is away (%s); %d channels left, trying again", describe(exc), left
                )
            tally.paused = True

    async def _plan(self, spans: list[Span], since: datetime) -> None:
        """Where each span begins: CATCHUP_VERIFY_HOURS before the channel's newest stored message, at most
        CATCHUP_HOURS back."""
        if not spans:
            return
        newest = await self._intake.newest_stored(s.channel.id for s in spans)
        floor = discord.utils.time_snowflake(since)
        for span in spans:
            span.newest = newest.get(span.channel.id)
            start = floor
            if span.newest is not None:
                verified_from = discord.utils.snowflake_time(span.newest) - self._verify
                start = max(floor, discord.utils.time_snowflake(verified_from))
            span.start = span.reached = start

    async def _try(self, span: Span, tally: Tally) -> bool:
        """Read one span on from where it got; True when it is done. A Discord failure leaves it for the next
        round (one line the first time); storage trouble is raised to the round."""
        try:
            async with asyncio.timeout(CHANNEL_SECONDS):
                await self._read(span)
            tally.deleted += await self._verify_span(span)
        # Not only HTTPException: a dropped connection surfaces as aiohttp's or the OS's error, a payload discord.py
        # cannot parse as its own; none may cost the other channels.
        except Exception as exc:
            if storage_trouble(exc):
                raise
            if isinstance(exc, discord.Forbidden | discord.NotFound):  # no later try would be answered
                span.read_all = True
                tally.dropped += 1
                log.warning(
                    "catching up skips channel %s of guild %s: %s", span.channel.id, span.guild_id, describe(exc)
                )
                return False
            span.failed += 1
            if span.failed == 1:
                log.warning(
                    "catching up on channel %s of guild %s failed: %s; trying again",
                    span.channel.id,
                    span.guild_id,
                    describe(exc),
                )
            return False
        tally.read += len(span.seen)
        return True

    async def _read(self, span: Span) -> None:
        """The channel's history after `span.reached`, oldest first, through the storing path."""
        after = discord.Object(id=span.reached)
        async for message in span.channel.history(after=after, oldest_first=True, limit=None):
            await self._store(message)
            span.seen.add(message.id)
            span.reached = max(span.reached, message.id)

    async def _verify_span(self, span: Span) -> int:
        """Delete the span's stored messages Discord no longer has (only a span Discord answered in full)."""
        assert span.start is not None
        gone: set[int] = set()
        if span.newest is not None and span.newest > span.start:
            gone = await self._intake.stored_between(span.channel.id, span.start, span.newest) - span.seen
            if gone:
                await self._intake.delete(sorted(gone))
        span.read_all = True
        return len(gone)

    def _resumed(self, tally: Tally) -> None:
        """A span was read after a pause: say once that the catch-up goes on."""
        if tally.paused:
            log.info("catching up again: storage is back")
            tally.paused = False


def _readable(guild: discord.Guild) -> list[Any]:
    """Text channels and active threads whose history the bot may read."""
    me = guild.me
    if me is None:
        return []
    found: list[Any] = []
    candidates: list[Any] = [*guild.text_channels, *guild.threads]
    for channel in candidates:
        allowed = channel.permissions_for(me)
        if allowed.view_channel and allowed.read_message_history:
            found.append(channel)
    return found
