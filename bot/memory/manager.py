"""MemoryManager: builds the memory layer's parts from settings, starts, flushes and stops them, and hands out
the small faces the rest of the bot uses — `intake`, `facts`, `recollection`, `admin`, `directory`.

Each front end keeps only the faces it uses, taken at construction: the listener `intake` (and `recollection` to
mark a reply under way), the responder `facts`, `recollection`, `directory` and `intake`, the slash-command cogs
`admin`, `facts` and `directory` (the member's cog `recollection` too). The composition root (bot/app.py), the
console and the CLI reach the faces through the manager they own. The parts stay attributes here for tests and
benchmarks that look inside.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.faults import Fault
from bot.llm.client import LLM
from bot.llm.embeddings import Embedder
from bot.memory.admin import Admin
from bot.memory.caches import CacheReport
from bot.memory.changes import Changes, Invalidation
from bot.memory.choices import Choices
from bot.memory.clock import Clock
from bot.memory.directory import Directory
from bot.memory.facts.face import Facts
from bot.memory.facts.model import LLMFactsModel
from bot.memory.facts.store import FactsModel, FactsStore
from bot.memory.intake.channels import ChannelScopes
from bot.memory.intake.face import Intake
from bot.memory.intake.queue import WriteBehindQueue
from bot.memory.intake.window import ChannelWindow
from bot.memory.names import NameDirectory
from bot.memory.recall import Recall
from bot.memory.recall.embedding import EmbeddingWorker, Replies, dimensions_of, encoder
from bot.memory.recall.vectors import VectorIndex
from bot.memory.recap.face import Recaps
from bot.memory.recollection import Recollection
from bot.memory.summaries.claims import Claims
from bot.memory.summaries.context import ContextBuilder
from bot.memory.summaries.daily import Summaries
from bot.memory.summaries.rollups import Rollups
from bot.memory.summaries.scheduler import SummaryScheduler
from bot.memory.upkeep import PlannerStatistics
from bot.settings import Settings
from db import vectors as vector_rows
from db.engine import create_session_factory

log = logging.getLogger(__name__)


class MemoryManager:
    """Owns ingestion, facts, summaries, context and recall for every guild; hands out their faces."""

    def __init__(
        self,
        engine: AsyncEngine,
        settings: Settings,
        *,
        llm: LLM | None = None,
        facts_model: FactsModel | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        storage: Fault | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock or Clock()
        self.sessions = create_session_factory(engine)
        # One fault state for the database, shared by everything that talks to it: one "down" line per outage.
        self.storage = storage or Fault("storage")
        self.choices = Choices(self.sessions, self.clock, default_zone=settings.default_timezone)
        self.names = NameDirectory(self.sessions)
        self.channels = ChannelScopes(self.sessions, self.clock)
        self.window = ChannelWindow()
        self.changes = Changes(
            engine,
            self.sessions,
            self.clock,
            choices=self.choices,
            channels=self.channels,
            window=self.window,
            compact_seconds=lambda: self.settings.sqlite_compact_seconds,
            fault=self.storage,
        )
        self.generations = self.changes.generations
        self._llm = llm
        self._build_facts(
            facts_model or (LLMFactsModel(llm, zone=self.choices.zone, clock=self.clock) if llm else None)
        )
        # Several processes share a PostgreSQL database; a SQLite file has one writing process (bot/app.py).
        self.claims = Claims(
            self.sessions, enabled=engine.dialect.name == "postgresql", lease=settings.summary_lease_seconds
        )
        self._build_summaries(llm)
        self.replies = Replies()  # replies and searches under way, which background writes let go first
        self.queue = WriteBehindQueue(
            engine,
            batch_rows=settings.ingest_batch_rows,
            flush_ms=settings.ingest_flush_ms,
            max_queue=settings.ingest_queue_max,
            shutdown_retry_seconds=settings.ingest_shutdown_seconds,
            on_written=self.changes.after_writes,
            before_write=self.channels.save_pending,  # a channel's rule is stored before its messages
            yield_to=self.replies.quiet,
            spill_dir=settings.data_dir,
            fault=self.storage,
            kept_from=self.kept_from,
        )
        self.statistics = PlannerStatistics(engine, lambda: self.queue.committer.stats.new_messages)
        self._embedder = embedder
        self._build_recall(embedder)
        self._register_caches()
        self._build_faces()

    def kept_from(self) -> datetime | None:
        """Where retention begins now: nothing said before it is stored, by any way in (None: RETENTION_DAYS 0)."""
        days = self.settings.retention_days
        return self.clock.now() - timedelta(days=days) if days > 0 else None

    def _build_facts(self, facts_model: FactsModel | None) -> None:
        self.fact_store = (
            FactsStore(self.sessions, facts_model, max_chars=self.settings.facts_max_chars, horizon=self.clock.horizon)
            if facts_model
            else None
        )

    def _build_summaries(self, llm: LLM | None) -> None:
        """Track 2 and the merged context need the model (or the offline provider) and a facts store."""
        self.summaries: Summaries | None = None
        self.rollups: Rollups | None = None
        self.context: ContextBuilder | None = None
        self.scheduler: SummaryScheduler | None = None
        if llm is None or self.fact_store is None:
            return
        generations, claims = self.generations, self.claims  # one of each per process, shared by the stages
        self.summaries = Summaries(
            self.sessions,
            llm,
            self.names,
            self.settings,
            self.clock,
            generations=generations,
            claims=claims,
            zone=self.choices.zone,
        )
        self.rollups = Rollups(
            self.sessions, self.summaries, llm, self.names, self.clock, generations=generations, claims=claims
        )
        self.context = ContextBuilder(
            self.fact_store,
            self.summaries,
            llm,
            self.names,
            sessions=self.sessions,
            settings=self.settings,
            clock=self.clock,
            rollups=self.rollups,
            generations=self.generations,
        )
        self.scheduler = SummaryScheduler(
            self.summaries,
            self.sessions,
            self.clock,
            concurrency=self.settings.summary_concurrency,
            jitter_seconds=self.settings.summary_jitter_seconds,
            fault=self.storage,
        )

    def _build_recall(self, embedder: Embedder | None) -> None:
        """Recall by words always; by meaning too when there is an embedding model."""
        self.vectors: VectorIndex | None = None
        self.embedding: EmbeddingWorker | None = None
        encode_query = None
        if embedder is not None:
            self.vectors = VectorIndex(self.sessions, embedder.model, dimensions_of(embedder, self.settings))
            self.embedding = EmbeddingWorker(
                encoder(embedder, "RETRIEVAL_DOCUMENT"),
                self.vectors,
                self.queue.put,
                self.sessions,
                self.queue.flush,
                replies=self.replies,
                local=bool(getattr(embedder, "local", False)),
                fault=self.storage,
            )
            query_encoder = encoder(embedder, "RETRIEVAL_QUERY")

            async def encode_query(text: str) -> np.ndarray:
                return (await query_encoder([text]))[0]

        self.recall = Recall(
            self.sessions,
            half_life_days=self.settings.recall_half_life_days,
            index=self.vectors,
            encode_query=encode_query,
        )

    def _register_caches(self) -> None:
        """Every cache drops what a change may have made false (bot/memory/changes.py calls these)."""
        self.changes.on_change(self._drop_caches)
        if self.vectors is not None:
            self.changes.on_vectors_removed(self.vectors.remove)  # embedded again if edited

    def _drop_caches(self, change: Invalidation) -> None:
        if change.names_changed:
            self.names.drop(change.guild_id, change.user_id)
        if self.fact_store is not None:
            self.fact_store.drop_cached(change.guild_id, change.user_id)
        if self.summaries is not None:
            self.summaries.drop(change.guild_id)
        if self.context is not None:
            self.context.drop(change.guild_id)
        if self.vectors is not None and change.messages_gone:
            self.vectors.drop(change.guild_id)  # rebuilt from SQL, where deleted messages took their vectors along
        if self.embedding is not None:
            self.embedding.drop(change.guild_id)  # texts waiting to be embedded may be deleted or rewritten ones
        self.recaps.drop(change.guild_id)  # a recap told from a deleted message or an opted-out member's goes

    def _build_faces(self) -> None:
        self.recaps = Recaps(
            self.sessions,
            llm=self._llm,
            names=self.names,
            choices=self.choices,
            clock=self.clock,
            summaries=self.summaries,
            generations=self.generations,
            budget_tokens=self.settings.recap_token_budget,
            max_days=self.settings.recap_max_days,
            bot_name=self.settings.bot_name,
        )
        self.directory = Directory(self.names, choices=self.choices, clock=self.clock, window=self.window)
        self.intake = Intake(
            self.queue,
            choices=self.choices,
            names=self.names,
            channels=self.channels,
            window=self.window,
            changes=self.changes,
            clock=self.clock,
            sessions=self.sessions,
            scheduler=self.scheduler,
            embedding=self.embedding,
            kept_from=self.kept_from,
        )
        self.facts = Facts(
            self.fact_store, names=self.names, changes=self.changes, sessions=self.sessions, flush=self.flush
        )
        self.recollection = Recollection(
            self.recall,
            facts=self.facts,
            context=self.context,
            names=self.names,
            choices=self.choices,
            clock=self.clock,
            replies=self.replies,
            budget_tokens=self.settings.recall_token_budget,
            vectors_ready=self._vectors_ready,
            wait_seconds=lambda: self.settings.memory_wait_seconds,
            recaps=self.recaps,
            follow_others=self.changes.feed.catch_up,
        )
        self.admin = Admin(
            self.engine,
            self.sessions,
            choices=self.choices,
            channels=self.channels,
            names=self.names,
            changes=self.changes,
            clock=self.clock,
            flush=self.flush,
            retention_days=self.settings.retention_days,
            counters=lambda: {"dead_letters_session": self.queue.stats.dead_letters},
            reports=self._cache_reports,
            unembedded=self._unembedded_count,
        )

    async def start(self, *, background: bool = True, schedule: bool = False) -> None:
        """Load what ingestion needs to decide (opt-outs, channels, zones); start the writer and the change feed,
        and (unless a short command) the embedding of messages in the background; with `schedule` (the bot, the
        console) also the summary scheduler (SUMMARY_SCHEDULE)."""
        await self.choices.load()
        await self.channels.load()
        await self.claims.prune()
        self.queue.start()
        await self.changes.start(background=background)
        if background:
            self.statistics.start()
        if self.embedding is not None and background:
            self.embedding.start()
            if (warm := getattr(self._embedder, "warm", None)) is not None:
                warm()  # questions go on words alone until the model is loaded
        if self.scheduler is not None and schedule and self.settings.summary_schedule:
            self.scheduler.start()

    async def _vectors_ready(self, guild_id: int | None) -> bool:
        if self._embedder is None or self.vectors is None:
            return False
        if guild_id is not None:
            await self.vectors.warm(guild_id)
        loaded = getattr(self._embedder, "loaded", None)
        return True if loaded is None else bool(await loaded())

    async def _unembedded_count(self) -> int:
        if self.embedding is None or self.vectors is None:
            return 0
        await self.flush()
        async with self.sessions() as session:
            return await vector_rows.unembedded_count(session, self.vectors.model)

    def _cache_reports(self) -> dict[str, CacheReport]:
        reports: dict[str, CacheReport] = {}
        if self.fact_store is not None:
            reports["facts"] = self.fact_store.cache_report()
        if self.summaries is not None:
            reports.update(self.summaries.cache_reports())
        if self.context is not None:
            reports["merged context"] = self.context.cache_report()
        reports["recaps"] = self.recaps.cache_report()
        return reports

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (usage records and a pending scrub included)."""
        await self.queue.flush()
        if self._llm is not None:
            await self._llm.flush_usage()
        await self.changes.flush()

    async def close(self) -> None:
        """Drain the queue and stop background work; the engine stays open for its owner to dispose."""
        if self.embedding is not None:
            await self.embedding.close()
        await self.statistics.close()
        await self.changes.close()
        # Outermost first: the scheduler and a context build wait on rollups and summaries, which would otherwise
        # outlive the engine and leave a connection to the garbage collector.
        if self.scheduler is not None:
            await self.scheduler.close()
        await self.recaps.close()
        for part in (self.context, self.rollups, self.summaries):
            if part is not None:
                await part.close()
        await self.queue.close()
