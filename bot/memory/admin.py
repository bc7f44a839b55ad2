"""Admin: what guild admins and operators do to memory — look at it (stats, export, caches), choose for a guild
(channel modes, time zone, opt-outs) and delete (a member, a channel, a time range, a whole guild).

Every deletion first lets what is queued land (so it cannot be written after the deletion), runs in one
transaction under the guild's lock, and ends in bot/memory/changes.py, which drops what was built from it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.memory.caches import CacheReport
from bot.memory.changes import Changes
from bot.memory.choices import Choices
from bot.memory.clock import Clock
from bot.memory.export import member_markdown
from bot.memory.intake.channels import ChannelScopes, Mode
from bot.memory.names import NameDirectory
from db import changes as change_log
from db import deletion, maintenance, statistics, stats
from db.busy import retry_busy

log = logging.getLogger(__name__)
Work = Callable[[AsyncSession], Awaitable[Counter[str]]]


class Admin:
    """Stats, exports, per-guild choices and deletions."""

    def __init__(
        self,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession],
        *,
        choices: Choices,
        channels: ChannelScopes,
        names: NameDirectory,
        changes: Changes,
        clock: Clock,
        flush: Callable[[], Awaitable[None]],
        retention_days: int,
        counters: Callable[[], dict[str, int]],
        reports: Callable[[], dict[str, CacheReport]],
        unembedded: Callable[[], Awaitable[int]],
    ) -> None:
        self._engine = engine
        self._sessions = sessions
        self._choices = choices
        self._channels = channels
        self._names = names
        self._changes = changes
        self._clock = clock
        self._flush = flush
        self._retention_days = retention_days
        self._counters = counters
        self._reports = reports
        self._unembedded = unembedded

    # ---- looking at memory ------------------------------------------------------------------------------------

    async def stats(self, guild_id: int) -> dict[str, int]:
        """What is stored for a guild and what the model cost in the last 24 hours (after pending writes)."""
        await self._flush()
        async with self._sessions() as session:
            figures = await stats.guild_stats(session, guild_id, now=self._clock.now())
        figures.update(self._counters())
        return figures

    async def guild_known(self, guild_id: int) -> bool:
        """Whether anything is stored for a guild (messages, facts, names, settings …), pending writes included."""
        await self._flush()
        async with self._sessions() as session:
            return await stats.guild_known(session, guild_id)

    async def some_guilds(self, *, limit: int = 10) -> list[int]:
        """Up to `limit` guilds memory keeps something about (to tell a mistyped guild id from a real one)."""
        async with self._sessions() as session:
            return await stats.some_guilds(session, limit=limit)

    async def last_message_at(self, guild_id: int, user_id: int | None = None) -> datetime | None:
        """When a member's (None: anyone's) newest stored message was written."""
        async with self._sessions() as session:
            return await stats.last_message_at(session, guild_id, user_id)

    async def unembedded_count(self) -> int:
        """How many stored messages of people have no vector yet (0 without an embedding model)."""
        return await self._unembedded()

    def cache_reports(self) -> dict[str, CacheReport]:
        """Hits, misses and size of every cache in front of SQL and the model, by name."""
        return self._reports()

    async def export(self, guild_id: int, user_id: int) -> str:
        """Everything kept about a member as Markdown, names rendered (a file for them to keep, no pings)."""
        await self._flush()
        name = await self._names.name(guild_id, user_id)
        text = await member_markdown(self._sessions, guild_id, user_id, name)
        return await self._names.render_mentions(guild_id, text, at=False)

    # ---- choices ----------------------------------------------------------------------------------------------

    async def set_channel_mode(self, guild_id: int, channel_id: int, mode: Mode) -> Counter[str]:
        """Include, exclude or auto-scope a channel; summaries that saw it under the old rule are dropped."""
        was_shared = self._channels.shared(guild_id, channel_id)
        await self._channels.set_mode(guild_id, channel_id, mode)
        if self._channels.shared(guild_id, channel_id) == was_shared:
            await self._changes.changed(guild_id, None, "channel")
            return Counter()
        work = deletion.drop_channel_summaries(guild_id=guild_id, channel_id=channel_id)
        return await self._delete(guild_id, None, work, "channel")

    async def set_timezone(self, guild_id: int, zone: str) -> None:
        """A guild's own time zone for its days (an IANA name, validated); caches of the guild are dropped."""
        await self._choices.set_zone(guild_id, zone)
        await self._changes.changed(guild_id, None, "timezone")

    def opted_out(self, guild_id: int, user_id: int) -> bool:
        """Whether the member asked not to be stored in this guild."""
        return self._choices.opted_out(guild_id, user_id)

    async def opt_out(self, guild_id: int, user_id: int, *, delete_stored: bool) -> Counter[str]:
        """Stop storing a member's messages (and, if asked, delete what is stored)."""
        await self._choices.opt_out(guild_id, user_id)
        await self._changes.changed(guild_id, user_id, "optout")
        return await self.forget_member(guild_id, user_id) if delete_stored else Counter()

    async def opt_in(self, guild_id: int, user_id: int) -> None:
        """Store a member's messages again."""
        await self._choices.opt_in(guild_id, user_id)
        await self._changes.changed(guild_id, user_id, "optout")

    # ---- deleting ---------------------------------------------------------------------------------------------

    async def apply_retention(self) -> Counter[str]:
        """Delete messages older than RETENTION_DAYS in every guild (0 keeps everything); rows per table."""
        total: Counter[str] = Counter()
        if self._retention_days <= 0:
            return total
        cutoff = self._clock.now() - timedelta(days=self._retention_days)
        async with self._sessions() as session:
            guilds = await stats.guilds_with_messages_before(session, cutoff)
        for guild_id in guilds:
            work = deletion.delete_before(guild_id=guild_id, before=cutoff)
            total += await self._delete(guild_id, None, work, "purge_before", analyze=False)
        async with self._sessions() as session, session.begin():  # no guild's cache holds a dead letter
            total += await deletion.drop_unplaced_dead_letters(session, cutoff)
            await deletion.drop_optout_spans_before(session, cutoff)  # retention withholds all that is older
        if any(total.values()):  # once for all guilds: each analysis reads the whole tables
            await self._analyze()
        return total

    async def forget_member(self, guild_id: int, user_id: int) -> Counter[str]:
        """Delete everything about a member in a guild — every table and every cache; rows deleted per table."""
        return await self.purge(guild_id, user_id=user_id)

    async def purge_channel(self, guild_id: int, channel_id: int) -> Counter[str]:
        """Delete a channel's messages and the summaries built from them."""
        return await self.purge(guild_id, channel_id=channel_id)

    async def purge_before(self, guild_id: int, before: datetime) -> Counter[str]:
        """Delete a guild's messages older than `before`, and the summaries of those days."""
        return await self.purge(guild_id, before=before)

    async def purge_guild(self, guild_id: int) -> Counter[str]:
        """Delete everything the guild said and what was built from it; its privacy choices stay."""
        return await self.purge(guild_id)

    async def purge(
        self,
        guild_id: int,
        *,
        user_id: int | None = None,
        channel_id: int | None = None,
        before: datetime | None = None,
        preview: bool = False,
    ) -> Counter[str]:
        """A member (forget_member), a channel, what is older than `before`, or else the whole guild's speech.

        `preview`: the rows it would change now, changing nothing. The deletion itself runs and is rolled back:
        counting with separate queries would drift from what the deletion really takes (the summaries of every
        day it touches, replies built on it, mentions rewritten).
        """
        work, what = _purge_work(guild_id, user_id, channel_id, before, at=self._clock.now())
        if preview:
            return await self._rolled_back(guild_id, work)
        return await self._delete(guild_id, user_id, work, what)

    async def _rolled_back(self, guild_id: int, work: Work) -> Counter[str]:
        await self._flush()

        async def once() -> Counter[str]:
            async with self._sessions() as session:
                transaction = await session.begin()
                try:
                    await change_log.lock_guild(session, guild_id)
                    return await work(session)
                finally:
                    await transaction.rollback()

        return await retry_busy(once)

    async def _delete(
        self, guild_id: int, user_id: int | None, work: Work, what: str, *, analyze: bool = True
    ) -> Counter[str]:
        await self._flush()  # what is still queued must not land after the deletion

        async def once() -> Counter[str]:
            async with self._sessions() as session, session.begin():
                await change_log.lock_guild(session, guild_id)
                counts = await work(session)
                # Logged without the member: the log must not keep who was deleted (others drop the guild's caches).
                await self._changes.record(session, guild_id, None, what)
            return counts

        # A deadlock with another process, or a lock wait that ran out behind one frozen mid-transaction: the
        # whole deletion runs again (it is one transaction), a bounded number of times.
        counts = await retry_busy(once)
        if analyze:  # before the scrub and the rewrite of the file, which then keep no page of the old samples
            await self._analyze()
        if what == "forget_member":  # intake now withholds what they said until now, by every way in
            await self._choices.load()
        await self._changes.deleted(guild_id, user_id, what, member_lines=what == "forget_member")
        log.info("deleted in guild %s: %s", guild_id, dict(counts))
        return counts

    async def _analyze(self) -> None:
        """The planner's statistics taken again: their samples of the deleted rows (names, words) go."""
        try:
            await maintenance.analyze(self._engine, deletion.TOUCHED_TABLES)
        except Exception:  # the rows are gone already; the caches must still be dropped
            log.warning("taking the planner's statistics again after a deletion failed", exc_info=True)

    # ---- upkeep -----------------------------------------------------------------------------------------------

    async def optimize(self) -> None:
        """Update the query planner's statistics now (after an import)."""
        await self._flush()
        await statistics.refresh(self._engine)

    async def compact_pending(self) -> None:
        """Rewrite the file now if deletions are waiting for it (a stop, a purge from the command line, tests)."""
        await self._changes.compact_pending()


# The tables a deletion reports, in words people use (the front ends show these counts).
WORDS = {
    "chat_history": "messages",
    "bot_replies": "replies of mine built on them",
    "user_facts": "facts entries",
    "fact_revisions": "fact revisions",
    "daily_summaries": "daily summaries",
    "historical_summaries": "weekly histories",
    "rollups": "rollups",
    "member_names": "names",
    "fact_revisions_unattributed": "revisions no longer attributed",
    "llm_calls": "usage records",
    "message_vectors": "message vectors",
    "dead_letters": "unstorable records",
    "reply_sources": "reply sources",
    "mentions_removed": "mentions in others' messages",
}


def rows_in_words(counts: Counter[str]) -> str:
    """'2 messages, 1 facts entries, …': the rows a deletion reports, in words people use."""
    order = list(WORDS)
    parts = [
        f"{n:,} {WORDS.get(table, table.replace('_', ' '))}"
        for table, n in sorted(counts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in WORDS else 99)
        if n
    ]
    return ", ".join(parts) if parts else "nothing (no rows matched)"


def _purge_work(
    guild_id: int, user_id: int | None, channel_id: int | None, before: datetime | None, *, at: datetime
) -> tuple[Work, str]:
    """Which deletion `purge` runs (or previews), and its name for the change log (`at`: now)."""
    if user_id is not None:
        return deletion.delete_member(guild_id=guild_id, user_id=user_id, at=at), "forget_member"
    if channel_id is not None:
        return deletion.delete_channel(guild_id=guild_id, channel_id=channel_id, at=at), "purge_channel"
    if before is not None:
        return deletion.delete_before(guild_id=guild_id, before=before), "purge_before"
    return deletion.delete_guild(guild_id=guild_id, at=at), "purge_guild"
