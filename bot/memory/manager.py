"""MemoryManager: the one entry point the rest of the bot uses for everything it remembers."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import delete as sa_delete
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.llm.client import LLM
from bot.llm.embeddings import Embedder
from bot.memory.caches import CacheReport
from bot.memory.channels import ChannelScopes, Mode
from bot.memory.clock import Clock
from bot.memory.context import ContextBuilder
from bot.memory.export import member_markdown
from bot.memory.facts import FactChange, FactsModel, FactsStore, Revision
from bot.memory.facts_llm import LLMFactsModel
from bot.memory.ingest import WriteBehindQueue
from bot.memory.names import NameDirectory
from bot.memory.recall import Hit, Recall
from bot.memory.rollups import Rollups
from bot.memory.summaries import Summaries
from bot.memory.types import IncomingMessage, MessageDelete, MessageEdit
from bot.memory.vectors import Vectors
from bot.memory.window import ChannelWindow
from bot.settings import Settings
from db import deletion
from db.engine import create_session_factory
from db.models import ChatMessage, GuildSettings, UserOptOut

log = logging.getLogger(__name__)


class MemoryManager:
    """Owns ingestion and facts (and, with the transient track, summaries and context) for every guild."""

    def __init__(
        self,
        engine: AsyncEngine,
        settings: Settings,
        *,
        llm: LLM | None = None,
        facts_model: FactsModel | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock or Clock()
        self.sessions = create_session_factory(engine)
        self.names = NameDirectory(self.sessions)
        self.channels = ChannelScopes(self.sessions, self.clock)
        self.window = ChannelWindow()
        facts_model = facts_model or (
            LLMFactsModel(llm, zone=settings.default_timezone, clock=self.clock) if llm else None
        )
        self._facts = (
            FactsStore(self.sessions, facts_model, max_chars=settings.facts_max_chars) if facts_model else None
        )
        self.summaries: Summaries | None = None
        self.rollups: Rollups | None = None
        self._context: ContextBuilder | None = None
        if llm is not None and self._facts is not None:
            self.summaries = Summaries(self.sessions, llm, self.names, settings, self.clock)
            self.rollups = Rollups(self.sessions, self.summaries, llm, self.names, self.clock)
            self._context = ContextBuilder(
                self._facts, self.summaries, llm, self.names, settings=settings, clock=self.clock, rollups=self.rollups
            )
        self.ingest = WriteBehindQueue(
            engine,
            batch_rows=settings.ingest_batch_rows,
            flush_ms=settings.ingest_flush_ms,
            max_queue=settings.ingest_queue_max,
        )
        self._optouts: set[tuple[int, int]] = set()
        self.vectors = Vectors(self.sessions, embedder, self.clock) if embedder is not None else None
        self._recall = Recall(self.sessions, half_life_days=settings.recall_half_life_days, vectors=self.vectors)

    async def start(self) -> None:
        """Load what ingestion needs to decide (opt-outs) and start the write-behind worker."""
        async with self.sessions() as session:
            rows = await session.execute(select(UserOptOut.guild_id, UserOptOut.user_id))
            self._optouts = {(g, u) for g, u in rows}
        await self.channels.load()
        if self.summaries is not None:
            async with self.sessions() as session:
                rows = await session.execute(
                    select(GuildSettings.guild_id, GuildSettings.timezone).where(GuildSettings.timezone.is_not(None))
                )
                self.summaries.zones = {guild: zone for guild, zone in rows}
        self.ingest.start()

    async def ingest_message(self, message: IncomingMessage) -> bool:
        """Queue a guild message for storage; False when its author opted out (nothing is kept)."""
        if (message.guild_id, message.author_id) in self._optouts:
            return False
        self.names.note(message.guild_id, message.author_id, message.author_name, message.author_username)
        self.window.add(message)
        if not self.ingest.offer(message):  # the common case costs no extra coroutine
            await self.ingest.put(message)
        return True

    async def note_member(self, guild_id: int, user_id: int, display_name: str, username: str | None) -> None:
        """A member changed their name: resolve and render them by the new one from now on."""
        self.names.note(guild_id, user_id, display_name, username)
        await self.names.store(guild_id, user_id, display_name, username, at=self.clock.now())

    async def ingest_edit(self, message_id: int, content: str, edited_at: datetime) -> None:
        """Queue new text for a stored message."""
        self.window.edit(message_id, content)
        await self.ingest.put(MessageEdit(message_id, content, edited_at))

    async def ingest_delete(self, message_ids: Iterable[int]) -> None:
        """Queue the removal of one or many messages (bulk deletes included)."""
        ids = tuple(message_ids)
        self.window.delete(ids)
        if ids:
            await self.ingest.put(MessageDelete(ids))

    @property
    def fact_store(self) -> FactsStore:
        """The facts track; needs a facts model (the LLM, or the offline provider)."""
        if self._facts is None:
            raise RuntimeError("MemoryManager was built without a facts model")
        return self._facts

    async def facts(self, guild_id: int, user_id: int) -> str | None:
        """What was explicitly remembered about a member, or None."""
        return await self.fact_store.facts(guild_id, user_id)

    async def remember(self, guild_id: int, user_id: int, fact: str, *, requested_by: int) -> FactChange:
        """Merge a fact about a member into what is known (newer wins), as a new revision."""
        subject = await self.names.name(guild_id, user_id)
        return await self.fact_store.remember(guild_id, user_id, fact, requested_by=requested_by, subject=subject)

    async def forget(self, guild_id: int, user_id: int, fact: str, *, requested_by: int) -> FactChange:
        """Remove a fact about a member; `.found` says whether there was anything to remove."""
        subject = await self.names.name(guild_id, user_id)
        return await self.fact_store.forget(guild_id, user_id, fact, requested_by=requested_by, subject=subject)

    async def fact_history(self, guild_id: int, user_id: int, *, limit: int = 25) -> list[Revision]:
        """Revisions of a member's facts, newest first."""
        return await self.fact_store.history(guild_id, user_id, limit=limit)

    async def revert(self, guild_id: int, user_id: int, revision_id: int, *, requested_by: int) -> FactChange:
        """Undo a revision (restore the blob as it was before it), recorded as a new revision."""
        return await self.fact_store.revert(guild_id, user_id, revision_id, requested_by=requested_by)

    async def get_memories(self, guild_id: int, user_id: int, *, now: datetime | None = None) -> str | None:
        """A member's merged context (facts, today, the last week); None when nothing is known."""
        if self._context is None:
            return await self.facts(guild_id, user_id)
        return await self._context.get_memories(guild_id, user_id, now=now)

    async def describe(self, guild_id: int, user_id: int) -> str | None:
        """Everything the bot would tell about a member, names rendered, nothing that pings."""
        known = await self.get_memories(guild_id, user_id)
        return await self.names.render_mentions(guild_id, known, at=False) if known else None

    async def recall(
        self,
        guild_id: int,
        query: str,
        *,
        user_id: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        channel_id: int | None = None,
        now: datetime | None = None,
        authors: dict[int, set[str]] | None = None,
    ) -> list[Hit]:
        """Messages and daily summaries matching `query`, best first (relevance × decay); asked in `channel_id`."""
        return await self._recall.recall(
            guild_id,
            query,
            now=now or self.clock.now(),
            zone=self.zone(guild_id),
            user_id=user_id,
            since=since,
            until=until,
            limit=limit,
            channel_id=channel_id,
            authors=authors,
        )

    def cache_reports(self) -> dict[str, CacheReport]:
        """Hits, misses and size of every cache in front of SQL and the model, by name."""
        reports: dict[str, CacheReport] = {}
        if self._facts is not None:
            reports["facts"] = self._facts.cache_report()
        if self.summaries is not None:
            reports.update(self.summaries.cache_reports())
        if self._context is not None:
            reports["merged context"] = self._context.cache_report()
        return reports

    async def export(self, guild_id: int, user_id: int) -> str:
        """Everything kept about a member as Markdown, names rendered (a file for them to keep, no pings)."""
        await self.flush()
        name = await self.names.name(guild_id, user_id)
        text = await member_markdown(self.sessions, guild_id, user_id, name)
        return await self.names.render_mentions(guild_id, text, at=False)

    async def apply_retention(self) -> Counter[str]:
        """Delete messages older than RETENTION_DAYS in every guild (0 keeps everything); rows per table."""
        total: Counter[str] = Counter()
        if self.settings.retention_days <= 0:
            return total
        cutoff = self.clock.now() - timedelta(days=self.settings.retention_days)
        async with self.sessions() as session:
            guilds = (
                await session.scalars(select(ChatMessage.guild_id).where(ChatMessage.timestamp < cutoff).distinct())
            ).all()
        for guild_id in guilds:
            total += await self.purge_before(guild_id, cutoff)
        return total

    def zone(self, guild_id: int) -> str:
        """The guild's time zone: its own setting, else DEFAULT_TIMEZONE."""
        return self.summaries.zone(guild_id) if self.summaries is not None else self.settings.default_timezone

    async def set_channel_mode(self, guild_id: int, channel_id: int, mode: Mode) -> Counter[str]:
        """Include, exclude or auto-scope a channel; summaries that saw it under the old rule are dropped."""
        was_shared = self.channels.shared(guild_id, channel_id)
        await self.channels.set_mode(guild_id, channel_id, mode)
        if self.channels.shared(guild_id, channel_id) == was_shared:
            return Counter()
        return await self._delete(
            guild_id, None, deletion.drop_channel_summaries(guild_id=guild_id, channel_id=channel_id)
        )

    async def set_timezone(self, guild_id: int, zone: str) -> None:
        """A guild's own time zone for its days (an IANA name, validated); caches of the guild are dropped."""
        ZoneInfo(zone)  # raises for an unknown zone, before anything changes
        async with self.sessions() as session, session.begin():
            row = await session.get(GuildSettings, guild_id)
            if row is None:
                session.add(GuildSettings(guild_id=guild_id, timezone=zone, updated_at=self.clock.now()))
            else:
                row.timezone, row.updated_at = zone, self.clock.now()
        if self.summaries is not None:
            self.summaries.zones[guild_id] = zone
            self.summaries.drop(guild_id)
        if self._context is not None:
            self._context.drop(guild_id)

    async def forget_member(self, guild_id: int, user_id: int) -> Counter[str]:
        """Delete everything about a member in a guild — every table and every cache; rows deleted per table."""
        return await self._delete(guild_id, user_id, deletion.delete_member(guild_id=guild_id, user_id=user_id))

    async def purge_channel(self, guild_id: int, channel_id: int) -> Counter[str]:
        """Delete a channel's messages and the summaries built from them."""
        return await self._delete(guild_id, None, deletion.delete_channel(guild_id=guild_id, channel_id=channel_id))

    async def purge_before(self, guild_id: int, before: datetime) -> Counter[str]:
        """Delete a guild's messages older than `before`, and the summaries of those days."""
        return await self._delete(guild_id, None, deletion.delete_before(guild_id=guild_id, before=before))

    async def purge_guild(self, guild_id: int) -> Counter[str]:
        """Delete everything kept about a guild."""
        counts = await self._delete(guild_id, None, deletion.delete_guild(guild_id=guild_id))
        self._optouts = {key for key in self._optouts if key[0] != guild_id}
        return counts

    async def opt_out(self, guild_id: int, user_id: int, *, delete_stored: bool) -> Counter[str]:
        """Stop storing a member's messages (and, if asked, delete what is stored)."""
        self._optouts.add((guild_id, user_id))
        async with self.sessions() as session, session.begin():
            await session.merge(UserOptOut(guild_id=guild_id, user_id=user_id, at=self.clock.now()))
        return await self.forget_member(guild_id, user_id) if delete_stored else Counter()

    async def opt_in(self, guild_id: int, user_id: int) -> None:
        """Store a member's messages again."""
        self._optouts.discard((guild_id, user_id))
        async with self.sessions() as session, session.begin():
            await session.execute(
                sa_delete(UserOptOut).where(UserOptOut.guild_id == guild_id, UserOptOut.user_id == user_id)
            )

    async def _delete(self, guild_id: int, user_id: int | None, work: deletion.Deletion) -> Counter[str]:
        await self.flush()  # what is still queued must not land after the deletion
        async with self.sessions() as session, session.begin():
            counts = await work(session)
        self.names.drop(guild_id, user_id)
        self.window.drop(guild_id, user_id)
        if self._facts is not None:
            self._facts.drop_cached(guild_id, user_id)
        if self.summaries is not None:
            self.summaries.drop(guild_id)
        if self._context is not None:
            self._context.drop(guild_id)
        if self.vectors is not None:
            self.vectors.drop(guild_id)
        log.info("deleted in guild %s: %s", guild_id, dict(counts))
        return counts

    async def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        await self.ingest.flush()

    async def close(self) -> None:
        """Drain the queue and stop background work; the engine stays open for its owner to dispose."""
        # Outermost first: a context build waits on rollups and summaries, which would otherwise outlive the
        # engine and leave a connection to the garbage collector.
        for part in (self._context, self.rollups, self.summaries):
            if part is not None:
                await part.close()
        await self.ingest.close()
