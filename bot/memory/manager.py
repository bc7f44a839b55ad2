"""MemoryManager: the one entry point the rest of the bot uses for everything it remembers.

Front ends (the Discord cogs, the console, the importer, the CLI) and the responder talk to this class only;
its parts (facts, summaries, rollups, context, recall, names, channels, the ingest queue) are its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from bot.lifecycle import Debounced
from bot.llm.client import LLM
from bot.llm.embeddings import Embedder
from bot.llm.prompts import ChatLine
from bot.memory.caches import CacheReport
from bot.memory.intake.channels import ChannelScopes, Mode
from bot.memory.summaries.claims import Claims
from bot.memory.clock import Clock
from bot.memory.coherence import ChangeFeed, Generations
from bot.memory.summaries.context import ContextBuilder
from bot.memory.embedding import EmbeddingWorker, Replies, dimensions_of, encoder
from bot.memory.export import member_markdown
from bot.memory.facts.store import FactChange, FactsModel, FactsStore, Revision
from bot.memory.facts.model import LLMFactsModel
from bot.memory.facts.forgetting import redact
from bot.memory.intake.queue import StoredCounts, WriteBehindQueue
from bot.memory.names import NameDirectory
from bot.memory.question import read as read_question
from bot.memory.recall import Found, Hit, Recall, Recalled, pack
from bot.memory.summaries.rollups import Rollups
from bot.memory.summaries.scheduler import SummaryScheduler
from bot.memory.summaries.daily import Summaries
from bot.memory.vector_index import VectorIndex
from bot.memory.intake.window import ChannelWindow
from bot.settings import Settings
from bot.text import MENTION
from db import changes, deletion, maintenance, members, stats
from db import vectors as vector_rows
from db.changes import Change
from db.engine import create_session_factory
from db.messages import DeadLetter, Touched
from db.records import (
    IncomingMessage,
    Kind,
    MessageDelete,
    MessageEdit,
    MessageKind,
    RefusedRecordError,
    ReplySource,
    normalised,
)

log = logging.getLogger(__name__)
SCRUB_DELAY_SECONDS = 5.0
NAMES_CHANGED = frozenset({"forget_member", "purge_guild", "names"})  # changes that remove or add names in bulk
Work = Callable[[AsyncSession], Awaitable[Counter[str]]]


class MemoryManager:
    """Owns ingestion, facts, summaries, context and recall for every guild."""

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
        self.generations = Generations()
        self.names = NameDirectory(self.sessions)
        self.channels = ChannelScopes(self.sessions, self.clock)
        self.window = ChannelWindow()
        self._llm = llm
        facts_model = facts_model or (LLMFactsModel(llm, zone=self.zone, clock=self.clock) if llm else None)
        self._facts = (
            FactsStore(self.sessions, facts_model, max_chars=settings.facts_max_chars) if facts_model else None
        )
        self.summaries: Summaries | None = None
        self.rollups: Rollups | None = None
        self._context: ContextBuilder | None = None
        self.scheduler: SummaryScheduler | None = None
        # Several processes share a PostgreSQL database; a SQLite file has one writing process (bot/app.py).
        self.claims = Claims(
            self.sessions, enabled=engine.dialect.name == "postgresql", lease=settings.summary_lease_seconds
        )
        if llm is not None and self._facts is not None:
            self.summaries = Summaries(
                self.sessions, llm, self.names, settings, self.clock, generations=self.generations, claims=self.claims
            )
            self.rollups = Rollups(
                self.sessions,
                self.summaries,
                llm,
                self.names,
                self.clock,
                generations=self.generations,
                claims=self.claims,
            )
            self._context = ContextBuilder(
                self._facts,
                self.summaries,
                llm,
                self.names,
                sessions=self.sessions,
                settings=settings,
                clock=self.clock,
                rollups=self.rollups,
                generations=self.generations,
            )
            self.scheduler = SummaryScheduler(
                self.summaries,
                self.sessions,
                self.clock,
                concurrency=settings.summary_concurrency,
                jitter_seconds=settings.summary_jitter_seconds,
            )
        self.replies = Replies()  # replies and searches under way, which background writes let go first
        self.ingest = WriteBehindQueue(
            engine,
            batch_rows=settings.ingest_batch_rows,
            flush_ms=settings.ingest_flush_ms,
            max_queue=settings.ingest_queue_max,
            shutdown_retry_seconds=settings.ingest_shutdown_seconds,
            on_written=self._after_writes,
            before_write=self.channels.save_pending,  # a channel's rule is stored before its messages
            yield_to=self.replies.quiet,
        )
        self._optouts: set[tuple[int, int]] = set()
        self._zones: dict[int, str] = {}
        self.vectors: VectorIndex | None = None
        self.embedding: EmbeddingWorker | None = None
        encode_query = None
        self._embedder = embedder
        if embedder is not None:
            self.vectors = VectorIndex(self.sessions, embedder.model, dimensions_of(embedder, settings))
            self.embedding = EmbeddingWorker(
                encoder(embedder, "RETRIEVAL_DOCUMENT"),
                self.vectors,
                self.ingest.put,
                self.sessions,
                self.ingest.flush,
                replies=self.replies,
                local=bool(getattr(embedder, "local", False)),
            )
            query_encoder = encoder(embedder, "RETRIEVAL_QUERY")

            async def encode_query(text: str) -> np.ndarray:
                return (await query_encoder([text]))[0]

        self._recall = Recall(
            self.sessions, half_life_days=settings.recall_half_life_days, index=self.vectors, encode_query=encode_query
        )
        self.feed = ChangeFeed(engine, self.sessions, self._remote_change)
        # After deletions: the write-ahead log scrubbed, and (SQLite) the file rewritten, once for a burst.
        self._scrub = Debounced(lambda: maintenance.scrub(engine), lambda: SCRUB_DELAY_SECONDS, name="elefant-scrub")
        self._compaction = Debounced(
            self._compact, lambda: self.settings.sqlite_compact_seconds, name="elefant-compact"
        )
        self._optimizing: asyncio.Task[None] | None = None

    async def start(self, *, background: bool = True, schedule: bool = False) -> None:
        """Load what ingestion needs to decide (opt-outs, channels, zones); start the writer and the change feed,
        and (unless a short command) the embedding of messages in the background; with `schedule` (the bot, the
        console) also the summary scheduler (SUMMARY_SCHEDULE)."""
        await self._load_choices()
        await self.channels.load()
        await self.claims.prune()
        self.ingest.start()
        await self.feed.start()
        if background and await maintenance.needs_compacting(self.engine):  # deletions a stop left unfinished
            self._schedule_compaction()
        if background:
            self._optimizing = asyncio.create_task(self._optimize_every_hour(), name="elefant-optimize")
        if self.embedding is not None and background:
            self.embedding.start()
            if (warm := getattr(self._embedder, "warm", None)) is not None:
                warm()  # questions go on words alone until the model is loaded
        if self.scheduler is not None and schedule and self.settings.summary_schedule:
            self.scheduler.start()

    async def vectors_ready(self, guild_id: int | None = None) -> bool:
        """Wait until questions can be embedded and searched in the guild's index (a one-question command, a
        benchmark); False without vectors. Replies never wait: they go on words alone meanwhile."""
        if self._embedder is None or self.vectors is None:
            return False
        if guild_id is not None:
            await self.vectors.warm(guild_id)
        loaded = getattr(self._embedder, "loaded", None)
        return True if loaded is None else bool(await loaded())

    async def _load_choices(self) -> None:
        async with self.sessions() as session:
            self._optouts = await members.optouts(session)
            self._zones = await members.zones(session)
        if self.summaries is not None:
            self.summaries.zones = self._zones

    # ---- ingestion (never waits on the database) -------------------------------------------------------

    async def ingest_message(self, message: IncomingMessage, *, wait: bool = False, embed_now: bool = True) -> bool:
        """Queue a guild message for storage; False when its author opted out (nothing is kept).

        Never waits for storage: a full queue overflows to disk. `wait=True` (the importer, benchmarks) waits
        for room instead, so a bulk load does not outrun the database. `embed_now=False` (an import) leaves the
        message to the embedding backlog, which reads it from the database: noting every message of a large
        export would hold all their text in memory.
        """
        if (message.guild_id, message.author_id) in self._optouts:
            return False
        try:
            message = normalised(message)  # type: ignore[assignment]
        except RefusedRecordError as exc:
            await self.ingest.put(DeadLetter(message, str(exc)), wait=wait)  # counted and logged (once) by the queue
            return True
        self.names.note(message.guild_id, message.author_id, message.author_name, message.author_username)
        if self.scheduler is not None:
            self.scheduler.note_guild(message.guild_id)
        self.window.add(message)
        if not self.ingest.offer(message):  # the common case costs no extra coroutine
            await self.ingest.put(message, wait=wait)
        if embed_now and self.embedding is not None and message.kind != Kind.BOT:
            self.embedding.note(
                message.message_id, message.guild_id, message.content, message.author_id, message.created_at
            )
        return True

    async def ingest_edit(
        self, message_id: int, content: str, edited_at: datetime, *, guild_id: int | None = None
    ) -> None:
        """Queue new text for a stored message (what was built from the old text follows once it is stored)."""
        try:
            edit = normalised(MessageEdit(message_id, content, edited_at))
        except RefusedRecordError:
            return  # no stored message has an impossible id
        assert isinstance(edit, MessageEdit)
        self.window.edit(message_id, edit.content)
        await self.ingest.put(edit)

    async def ingest_delete(self, message_ids: Iterable[int]) -> None:
        """Queue the removal of one or many messages (bulk deletes included) and of what was built from them."""
        ids = tuple(message_ids)
        self.window.delete(ids)
        if ids:
            await self.ingest.put(normalised(MessageDelete(ids)))

    async def mark_command(self, message_id: int) -> None:
        """A stored message turned out to be a command to the bot: it is no news for summaries."""
        await self.ingest.put(MessageKind(message_id, Kind.COMMAND))

    async def record_reply(
        self, reply: IncomingMessage, *, members: Iterable[int], messages: Iterable[int] = ()
    ) -> bool:
        """Store one of the bot's own replies with what it was built from (members' data, quoted messages).

        A reply built from an opted-out member's data is not stored (False). Deleting any of its sources
        (forget-me, a purge, a Discord delete, "forget that …") deletes the reply too.
        """
        sources, messages = set(members), set(messages)
        if any((reply.guild_id, member) in self._optouts for member in sources):
            return False
        self.window.add(reply, members=sources, quoted=messages)
        await self.ingest.put(normalised(IncomingMessage(**{**_fields(reply), "kind": Kind.BOT})))
        for member in sorted(sources):
            await self.ingest.put(ReplySource(reply.message_id, reply.guild_id, user_id=member))
        for quoted in sorted(messages):
            await self.ingest.put(ReplySource(reply.message_id, reply.guild_id, message_id=quoted))
        return True

    async def note_member(self, guild_id: int, user_id: int, display_name: str, username: str | None) -> None:
        """A member changed their name: resolve and render them by the new one from now on."""
        if self.opted_out(guild_id, user_id):  # not stored, as their messages are not
            return
        self.names.note(guild_id, user_id, display_name, username)
        await self.names.store(guild_id, user_id, display_name, username, at=self.clock.now())

    def note_name(self, guild_id: int, user_id: int, display_name: str, username: str | None = None) -> None:
        """Know a member's name before any message of theirs is stored (console, tests)."""
        self.names.note(guild_id, user_id, display_name, username)

    async def observe_channel(
        self,
        guild_id: int,
        channel_id: int,
        *,
        is_private: bool | None,
        parent_id: int | None = None,
        channel_type: str | None = None,
    ) -> None:
        """Record whether a channel or thread is private (and a thread's parent) as messages arrive (None: unknown)."""
        await self.channels.observe(
            guild_id, channel_id, is_private=is_private, parent_id=parent_id, channel_type=channel_type
        )

    # ---- what front ends may ask --------------------------------------------------------------------------

    def now(self) -> datetime:
        """The memory's clock (a fake one in the console and tests)."""
        return self.clock.now()

    def zone(self, guild_id: int) -> str:
        """The guild's time zone: its own setting, else DEFAULT_TIMEZONE."""
        return self._zones.get(guild_id, self.settings.default_timezone)

    async def name(self, guild_id: int, user_id: int) -> str:
        """A member's display name, or a neutral placeholder that never pings."""
        return await self.names.name(guild_id, user_id)

    async def display_names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names of the members that have one."""
        return await self.names.names(guild_id, user_ids)

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """Members called `name` (display name or username, in any case and script); several: ambiguous."""
        return await self.names.resolve(guild_id, name)

    async def resolve_all(self, guild_id: int, names: list[str]) -> dict[str, list[int]]:
        """`resolve` of several names at once: name -> user IDs."""
        return await self.names.resolve_all(guild_id, names)

    async def render_mentions(self, guild_id: int, text: str, *, at: bool = True) -> str:
        """`<@id>` written as names, so nothing shown or sent pings anyone."""
        return await self.names.render_mentions(guild_id, text, at=at)

    async def render_all_mentions(
        self, guild_id: int, texts: list[str], *, at: bool = True, also: Mapping[int, str] | None = None
    ) -> list[str]:
        """`render_mentions` of many texts, with one lookup of the names (`also`: names known without asking)."""
        return await self.names.render_all(guild_id, texts, at=at, also=also)

    def channel_lines(
        self, guild_id: int, channel_id: int, *, budget_tokens: int, before: int | None = None
    ) -> list[ChatLine]:
        """The channel's own latest messages within a token budget (a private channel's talk stays in it)."""
        return self.window.recent(guild_id, channel_id, budget_tokens=budget_tokens, before=before)

    async def stats(self, guild_id: int) -> dict[str, int]:
        """What is stored for a guild and what the model cost in the last 24 hours (after pending writes)."""
        await self.flush()
        async with self.sessions() as session:
            figures = await stats.guild_stats(session, guild_id, now=self.clock.now())
        figures["dead_letters_session"] = self.ingest.stats.dead_letters
        return figures

    async def guild_known(self, guild_id: int) -> bool:
        """Whether anything is stored for a guild (messages, facts, names, settings …), pending writes included."""
        await self.flush()
        async with self.sessions() as session:
            return await stats.guild_known(session, guild_id)

    async def some_guilds(self, *, limit: int = 10) -> list[int]:
        """Up to `limit` guilds memory keeps something about (to tell a mistyped guild id from a real one)."""
        async with self.sessions() as session:
            return await stats.some_guilds(session, limit=limit)

    def stored_so_far(self) -> StoredCounts:
        """Messages this process has stored new, found stored already, and kept as dead letters (counters)."""
        stats = self.ingest.stats
        return StoredCounts(stats.new_messages, stats.known_messages, stats.dead_letters)

    async def unembedded_count(self) -> int:
        """How many stored messages of people have no vector yet (0 without an embedding model)."""
        if self.embedding is None or self.vectors is None:
            return 0
        await self.flush()
        async with self.sessions() as session:
            return await vector_rows.unembedded_count(session, self.vectors.model)

    async def last_message_at(self, guild_id: int, user_id: int) -> datetime | None:
        """When a member's newest stored message was written."""
        async with self.sessions() as session:
            return await stats.last_message_at(session, guild_id, user_id)

    # ---- facts ------------------------------------------------------------------------------------------------

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
        change = await self.fact_store.remember(guild_id, user_id, fact, requested_by=requested_by, subject=subject)
        if change.changed:
            await self._changed(guild_id, user_id, "facts")
        return change

    async def forget(self, guild_id: int, user_id: int, fact: str, *, requested_by: int) -> FactChange:
        """Forget a statement about a member: from the facts and from everything memory keeps that repeats it.

        `.found` says whether it was anywhere; `.redacted` counts the messages, replies and summaries it left
        (their days' summaries and the facts' history are cleaned too).
        """
        subject = await self.names.name(guild_id, user_id)
        change = await self.fact_store.forget(guild_id, user_id, fact, requested_by=requested_by, subject=subject)
        await self.flush()  # what is still queued (the command itself) is redacted too
        async with self.sessions() as session, session.begin():
            await changes.lock_guild(session, guild_id)
            done = await redact(session, guild_id, user_id, [subject], fact)
            if done.anything or change.changed:
                await changes.record(session, guild_id, user_id, "forget", origin=self.feed.origin, at=self.clock.now())
        self.window.drop(guild_id, None)  # the statement may be in any line of the guild's windows
        self._invalidate(guild_id, user_id, "forget", messages_gone=True)
        await self._after_deletion()
        redacted = done.counts["messages"] + done.counts["bot_replies"] + done.counts["summaries"]
        return FactChange(
            change.before, change.after, change.revision_id, found=change.found or redacted > 0, redacted=redacted
        )

    async def fact_history(self, guild_id: int, user_id: int, *, limit: int = 25) -> list[Revision]:
        """Revisions of a member's facts, newest first."""
        return await self.fact_store.history(guild_id, user_id, limit=limit)

    async def revert(self, guild_id: int, user_id: int, revision_id: int, *, requested_by: int) -> FactChange:
        """Undo a revision (restore the blob as it was before it), recorded as a new revision."""
        change = await self.fact_store.revert(guild_id, user_id, revision_id, requested_by=requested_by)
        if change.changed:
            await self._changed(guild_id, user_id, "facts")
        return change

    # ---- context and recall ---------------------------------------------------------------------------------

    async def get_memories(
        self, guild_id: int, user_id: int, *, now: datetime | None = None, patient: bool = False
    ) -> str | None:
        """A member's merged context (facts, today, the last week, earlier); None when nothing is known.

        A reply waits at most MEMORY_WAIT_SECONDS; `patient` (views of memory: /context, `show`) waits for it all.
        """
        if self._context is None:
            return await self.facts(guild_id, user_id)
        return await self._context.get_memories(guild_id, user_id, now=now, patient=patient)

    async def describe(self, guild_id: int, user_id: int, *, patient: bool = False) -> str | None:
        """Everything the bot would tell about a member, names rendered, nothing that pings."""
        known = await self.get_memories(guild_id, user_id, patient=patient)
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
    ) -> list[Hit]:
        """Messages and daily summaries about `query`, best first; asked in `channel_id` (its own may be private).

        Members the query names (by mention, or by a name only one member has) become a preference for their
        messages and messages about them, not words to search for.
        """
        now = now or self.clock.now()
        zone = self.zone(guild_id)
        question = await read_question(query, now=now, zone=zone, resolve=partial(self.resolve_all, guild_id))
        messages, summaries = await self._recall.find(
            guild_id, question, now=now, zone=zone, here=channel_id, since=since, until=until, user_id=user_id
        )
        # Summaries keep to their share (a quarter, at least one) and never push messages out of order.
        merged = messages[:limit] + summaries[: max(1, limit // 4)]
        merged.sort(key=lambda h: -h.score)
        return merged[:limit]

    async def search(
        self,
        guild_id: int,
        text: str,
        *,
        channel_id: int | None,
        now: datetime | None = None,
        summaries: bool = True,
        encoding: asyncio.Event | None = None,
        light: bool = False,
    ) -> Found:
        """Recall's ranked message and summary hits for a message, before they become snippets (a reply starts
        this while the model routes the message, without `summaries`, and `recollect` finishes it); `encoding`
        is set once the question has gone to the encoder (or will not); `light`: a chat's search (`Recall.find`)."""
        now = now or self.clock.now()
        zone = self.zone(guild_id)
        async with self.replies.under_way():  # background embedding waits meanwhile (a search outside a reply too)
            question = await read_question(text, now=now, zone=zone, resolve=partial(self.resolve_all, guild_id))
            return await self._recall.find(
                guild_id,
                question,
                now=now,
                zone=zone,
                here=channel_id,
                summaries=summaries,
                encoding=encoding,
                light=light,
            )

    async def recollect(
        self,
        guild_id: int,
        text: str,
        *,
        channel_id: int | None,
        budget: int | None = None,
        now: datetime | None = None,
        relevant_only: bool = False,
        found: Awaitable[Found] | None = None,
        asked_in: int | None = None,
    ) -> Recalled:
        """What recall gives the model for a message: snippets around the best hits and summaries, packed.

        `relevant_only` (chat): only hits that hold most of the message's words or clearly share its meaning,
        so a chat about nothing in particular costs nothing (its own search is `light`). `found`:
        `search(…, summaries=False)` for this message, under way (its summaries are searched here, if wanted).
        `asked_in`: the stored message that asks (it matches itself best and answers nothing).
        """
        zone = self.zone(guild_id)
        now = now or self.clock.now()
        searched = found or self.search(
            guild_id, text, channel_id=channel_id, now=now, summaries=not relevant_only, light=relevant_only
        )
        hits, summaries = await searched
        hits = [h for h in hits if asked_in is None or h.message_id != asked_in]
        if relevant_only:
            hits = [h for h in hits if h.relevant()]
        snippets = await self._recall.snippets(guild_id, hits, here=channel_id)
        if found is not None and not relevant_only:  # a question: the summaries its routed search left out
            summaries = await self._summaries_for(guild_id, text, now=now, zone=zone)
        for snippet in snippets:  # the asking message may still come in as a hit's neighbour or reply
            snippet.turns = [t for t in snippet.turns if asked_in is None or t.message_id != asked_in]
        people = {t.user_id for s in snippets for t in s.turns} | {h.user_id for h in summaries}
        people |= {int(m) for s in snippets for t in s.turns for m in MENTION.findall(t.text)}
        names = await self.names.names(guild_id, people)
        packed = pack(snippets, summaries[:5], names, budget=budget or self.settings.recall_token_budget, zone=zone)
        return Recalled(snippets, summaries[:5], packed)

    async def _summaries_for(self, guild_id: int, text: str, *, now: datetime, zone: str) -> list[Hit]:
        question = await read_question(text, now=now, zone=zone, resolve=partial(self.resolve_all, guild_id))
        return await self._recall.find_summaries(guild_id, question, now=now, zone=zone)

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

    # ---- choices and deletion -----------------------------------------------------------------------------

    async def apply_retention(self) -> Counter[str]:
        """Delete messages older than RETENTION_DAYS in every guild (0 keeps everything); rows per table."""
        total: Counter[str] = Counter()
        if self.settings.retention_days <= 0:
            return total
        cutoff = self.clock.now() - timedelta(days=self.settings.retention_days)
        async with self.sessions() as session:
            guilds = await stats.guilds_with_messages_before(session, cutoff)
        for guild_id in guilds:
            total += await self.purge_before(guild_id, cutoff)
        return total

    async def set_channel_mode(self, guild_id: int, channel_id: int, mode: Mode) -> Counter[str]:
        """Include, exclude or auto-scope a channel; summaries that saw it under the old rule are dropped."""
        was_shared = self.channels.shared(guild_id, channel_id)
        await self.channels.set_mode(guild_id, channel_id, mode)
        if self.channels.shared(guild_id, channel_id) == was_shared:
            await self._changed(guild_id, None, "channel")
            return Counter()
        work = deletion.drop_channel_summaries(guild_id=guild_id, channel_id=channel_id)
        return await self._delete(guild_id, None, work, "channel")

    async def set_timezone(self, guild_id: int, zone: str) -> None:
        """A guild's own time zone for its days (an IANA name, validated); caches of the guild are dropped."""
        ZoneInfo(zone)  # raises for an unknown zone, before anything changes
        async with self.sessions() as session, session.begin():
            await members.set_zone(session, guild_id, zone, at=self.clock.now())
        self._zones[guild_id] = zone
        await self._changed(guild_id, None, "timezone")

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
    ) -> Counter[str]:
        """A member (forget_member), a channel, what is older than `before`, or else the whole guild's speech."""
        work, what = _purge_work(guild_id, user_id, channel_id, before)
        return await self._delete(guild_id, user_id, work, what)

    async def deletion_preview(
        self,
        guild_id: int,
        *,
        user_id: int | None = None,
        channel_id: int | None = None,
        before: datetime | None = None,
    ) -> Counter[str]:
        """Rows `purge` with the same arguments would change now, changing nothing.

        The deletion itself runs and is rolled back: counting with separate queries would drift from what the
        deletion really takes (the summaries of every day it touches, replies built on it, mentions rewritten).
        """
        work, _ = _purge_work(guild_id, user_id, channel_id, before)
        await self.flush()
        async with self.sessions() as session:
            transaction = await session.begin()
            try:
                await changes.lock_guild(session, guild_id)
                return await work(session)
            finally:
                await transaction.rollback()

    async def opt_out(self, guild_id: int, user_id: int, *, delete_stored: bool) -> Counter[str]:
        """Stop storing a member's messages (and, if asked, delete what is stored)."""
        self._optouts.add((guild_id, user_id))
        async with self.sessions() as session, session.begin():
            await members.opt_out(session, guild_id, user_id, at=self.clock.now())
        await self._changed(guild_id, user_id, "optout")
        return await self.forget_member(guild_id, user_id) if delete_stored else Counter()

    async def opt_in(self, guild_id: int, user_id: int) -> None:
        """Store a member's messages again."""
        self._optouts.discard((guild_id, user_id))
        async with self.sessions() as session, session.begin():
            await members.opt_in(session, guild_id, user_id)
        await self._changed(guild_id, user_id, "optout")

    def opted_out(self, guild_id: int, user_id: int) -> bool:
        """Whether the member asked not to be stored in this guild."""
        return (guild_id, user_id) in self._optouts

    async def _delete(self, guild_id: int, user_id: int | None, work: Work, what: str) -> Counter[str]:
        await self.flush()  # what is still queued must not land after the deletion
        async with self.sessions() as session, session.begin():
            await changes.lock_guild(session, guild_id)
            counts = await work(session)
            # Logged without the member: the log must not keep who was deleted (others drop the guild's caches).
            await changes.record(session, guild_id, None, what, origin=self.feed.origin, at=self.clock.now())
        # A member's lines (and replies built on their data) go; other purges cannot tell which lines went.
        self.window.drop(guild_id, user_id if what == "forget_member" else None)
        self._invalidate(guild_id, user_id, what, messages_gone=what != "channel")
        await self._after_deletion()
        log.info("deleted in guild %s: %s", guild_id, dict(counts))
        return counts

    async def names_stored(self, guild_id: int) -> None:
        """Names were stored in bulk (an import): every process reads the guild's names again."""
        await self._changed(guild_id, None, "names")

    async def _changed(self, guild_id: int, user_id: int | None, what: str) -> None:
        """Log a change for other processes and drop what this one cached."""
        async with self.sessions() as session, session.begin():
            await changes.record(session, guild_id, user_id, what, origin=self.feed.origin, at=self.clock.now())
        self._invalidate(guild_id, user_id, what)

    def _invalidate(self, guild_id: int, user_id: int | None, what: str, *, messages_gone: bool = False) -> None:
        """Drop everything this process cached that a change (`what`, as the change log names it) in the guild
        (about a member) may have made false.

        `messages_gone`: messages were deleted or rewritten in bulk, so the guild's vector index is rebuilt
        (deleted messages never reach anyone anyway: candidates are read back through SQL).
        """
        self.generations.bump(guild_id)  # builds running now will neither cache nor store their result
        if what in NAMES_CHANGED:  # reading a guild's names again costs a reply ~100 ms at 20 k: only for these
            self.names.drop(guild_id, user_id)
        if self._facts is not None:
            self._facts.drop_cached(guild_id, user_id)
        if self.summaries is not None:
            self.summaries.drop(guild_id)
        if self._context is not None:
            self._context.drop(guild_id)
        if self.vectors is not None and messages_gone:
            self.vectors.drop(guild_id)  # rebuilt from SQL, where deleted messages took their vectors along
        if self.embedding is not None:
            self.embedding.drop(guild_id)  # texts waiting to be embedded may be deleted or rewritten ones

    async def _remote_change(self, change: Change) -> None:
        """Another process changed memory: follow it."""
        if change.what in {"optout", "purge_guild", "forget_member", "timezone"}:
            await self._load_choices()
        if change.what == "channel":
            await self.channels.load()
        if change.what in {"forget_member", "purge_guild", "purge_channel", "purge_before", "forget", "messages"}:
            self.window.drop(change.guild_id, None)  # the window cannot tell which lines went
        gone = change.what in {"forget_member", "purge_guild", "purge_channel", "purge_before", "forget"}
        self._invalidate(change.guild_id, change.user_id, change.what, messages_gone=gone)

    async def _after_writes(self, touched: list[Touched]) -> None:
        """Edits, deletes and re-kindings were stored: drop what was built from the old text, everywhere."""
        by_guild: dict[int, list[Touched]] = {}
        for row in touched:
            by_guild.setdefault(row.guild_id, []).append(row)
        for guild_id, rows in by_guild.items():
            counts: Counter[str] = Counter()
            async with self.sessions() as session, session.begin():
                await changes.lock_guild(session, guild_id)
                await deletion.drop_derived(session, guild_id, deletion.utc_days(r.at for r in rows), counts)
                await deletion.drop_replies(session, guild_id, messages=[r.message_id for r in rows], counts=counts)
                await vector_rows.forget(session, [r.message_id for r in rows])  # new text: embedded again
                await changes.record(session, guild_id, None, "messages", origin=self.feed.origin, at=self.clock.now())
            self._invalidate(guild_id, None, "messages")
            if self.vectors is not None:
                self.vectors.remove(guild_id, [r.message_id for r in rows])  # embedded again if edited
        self._schedule_scrub()

    # ---- lifecycle ----------------------------------------------------------------------------------------------

    def _schedule_scrub(self) -> None:
        """Deleted in Discord: compact soon (one scrub for a burst of deletes), not on every event."""
        self._scrub.request()
        self._schedule_compaction()

    async def _after_deletion(self) -> None:
        """An explicit deletion: the log scrubbed at once, the file rewritten SQLITE_COMPACT_SECONDS later."""
        await maintenance.scrub(self.engine)
        self._schedule_compaction()

    def _schedule_compaction(self) -> None:
        """Rewrite the SQLite file SQLITE_COMPACT_SECONDS after deletions or edits (once for a burst of them)."""
        if self.engine.dialect.name == "sqlite":
            self._compaction.request()

    async def _compact(self) -> None:
        try:
            await maintenance.compact(self.engine)
        except Exception:  # the rows are gone already; the bytes go at the next compaction
            log.exception("rewriting the database file after deletions failed; trying again at the next start")

    async def _optimize_every_hour(self) -> None:
        while True:
            try:
                await maintenance.optimize(self.engine)
            except Exception:  # statistics are an optimisation; the next hour tries again
                log.warning("updating the query planner's statistics failed", exc_info=True)
            await asyncio.sleep(3600)

    async def optimize(self) -> None:
        """Update the query planner's statistics now (after an import)."""
        await self.flush()
        await maintenance.optimize(self.engine)

    async def compact_pending(self) -> None:
        """Rewrite the file now if deletions are waiting for it (a stop, a purge from the command line, tests)."""
        await self._compaction.now()

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (usage records and a pending scrub included)."""
        await self.ingest.flush()
        if self._llm is not None:
            await self._llm.flush_usage()
        await self._scrub.now()

    async def close(self) -> None:
        """Drain the queue and stop background work; the engine stays open for its owner to dispose."""
        await self.feed.close()
        if self.embedding is not None:
            await self.embedding.close()
        await self._scrub.cancel()
        if self._optimizing is not None:
            self._optimizing.cancel()
            await asyncio.gather(self._optimizing, return_exceptions=True)
        if self._compaction.pending:
            log.info("rewriting the database file so that what was deleted leaves it")
            await self.compact_pending()
        # Outermost first: the scheduler and a context build wait on rollups and summaries, which would otherwise
        # outlive the engine and leave a connection to the garbage collector.
        if self.scheduler is not None:
            await self.scheduler.close()
        for part in (self._context, self.rollups, self.summaries):
            if part is not None:
                await part.close()
        await self.ingest.close()


def _fields(message: IncomingMessage) -> dict[str, Any]:
    return {name: getattr(message, name) for name in IncomingMessage.__dataclass_fields__}


def _purge_work(
    guild_id: int, user_id: int | None, channel_id: int | None, before: datetime | None
) -> tuple[Work, str]:
    """Which deletion `purge` and `deletion_preview` run, and its name for the change log."""
    if user_id is not None:
        return deletion.delete_member(guild_id=guild_id, user_id=user_id), "forget_member"
    if channel_id is not None:
        return deletion.delete_channel(guild_id=guild_id, channel_id=channel_id), "purge_channel"
    if before is not None:
        return deletion.delete_before(guild_id=guild_id, before=before), "purge_before"
    return deletion.delete_guild(guild_id=guild_id), "purge_guild"
