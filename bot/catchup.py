"""Catch-up from Discord: what was said while the bot was away is read back from each channel's history.

A crash loses what the write-behind queue held, and nothing said while the bot is stopped (a deploy, a restart,
an outage) reaches it through the gateway. Discord keeps the log, so on READY and on RESUMED each readable text
channel and active thread is read from shortly before its newest stored message (`OVERLAP`, so edits and
deletions made meanwhile are seen too) and at most CATCHUP_HOURS back, oldest first, and every message goes
through the listener's own storing path (kinds, channel scope, opt-outs, names) without being answered. Stored
messages of the span that Discord no longer has were deleted meanwhile and are deleted here. Storage makes a
replay harmless (upserts by message id, a newer edit wins, tombstones keep deletions deleted).

One catch-up runs at a time (a READY during one asks for another pass after it); channels are read one at a
time, so discord.py's rate limiting paces it, in the background: replies never wait for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import discord

from bot.faults import describe, storage_trouble
from bot.lifecycle import spawn
from bot.memory.intake.face import Intake

log = logging.getLogger(__name__)
OVERLAP = timedelta(hours=1)  # re-read before the newest stored message: edits and deletions made while away
CHANNEL_SECONDS = 300.0  # the most one channel's history may take; the others go on after it
Store = Callable[[discord.Message], Awaitable[bool]]


class CatchUp:
    """Reads back what the bot missed, guild by guild, channel by channel."""

    def __init__(self, bot: Any, store: Store, intake: Intake, *, hours: float) -> None:
        self._bot = bot
        self._store = store
        self._intake = intake
        self._hours = hours
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
            for guild in list(self._bot.guilds):
                try:
                    await self.guild(guild)
                except Exception as exc:  # noqa: BLE001 - storage away at READY: the next guild (and READY) go on
                    if storage_trouble(exc):  # every other guild would fail alike: one line, not one per guild
                        log.warning(
                            "catching up stopped: storage is away (%s); the next connect reads back", describe(exc)
                        )
                        return
                    log.warning("catching up on guild %s failed: %s", guild.id, describe(exc))
            if not self._again:
                return

    async def guild(self, guild: discord.Guild) -> None:
        """Read back one guild's readable channels; a channel that fails is logged and skipped."""
        since = datetime.now(UTC) - timedelta(hours=self._hours)
        channels = _readable(guild)
        newest = await self._intake.newest_stored(channel.id for channel in channels)
        read = deleted = failed = 0
        log.info("catching up on %d channels of guild %s (at most %g hours back)", len(channels), guild.id, self._hours)
        for channel in channels:
            try:
                async with asyncio.timeout(CHANNEL_SECONDS):
                    got, gone = await self._channel(channel, newest.get(channel.id), since)
            # Not only HTTPException: a dropped connection surfaces as aiohttp's or the OS's error, a storage
            # outage as the database driver's, a payload discord.py cannot parse as its own; none may cost the rest.
            except Exception as exc:  # noqa: BLE001 - logged in one line, the channel skipped (no deletions)
                failed += 1
                log.warning("catching up on channel %s of guild %s failed: %s", channel.id, guild.id, describe(exc))
                continue
            read, deleted = read + got, deleted + gone
        log.info(
            "caught up on guild %s: %d messages read back, %d deleted meanwhile, %d channels failed",
            guild.id,
            read,
            deleted,
            failed,
        )

    async def _channel(self, channel: Any, newest: int | None, since: datetime) -> tuple[int, int]:
        """Store the channel's history after where storage ends; delete what Discord no longer has. (read, deleted)"""
        floor = discord.utils.time_snowflake(since)
        after = floor
        if newest is not None:
            after = max(floor, discord.utils.time_snowflake(discord.utils.snowflake_time(newest) - OVERLAP))
        seen: set[int] = set()
        async for message in channel.history(after=discord.Object(id=after), oldest_first=True, limit=None):
            seen.add(message.id)
            await self._store(message)
        gone: set[int] = set()
        if newest is not None and newest > after:  # only a span Discord was asked about in full
            gone = await self._intake.stored_between(channel.id, after, newest) - seen
            if gone:
                await self._intake.delete(sorted(gone))
        return len(seen), len(gone)


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
