"""What happens after memory changes, in one place: the change is logged for other processes, every cache that
may now be false is dropped, other processes' changes are followed, and deleted bytes are scrubbed from the file.

Every stage that caches registers how to drop its entries (`on_change`), so a new cache cannot be forgotten by
a deletion path: there is only this one path.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.faults import Fault
from bot.lifecycle import Debounced
from bot.memory.choices import Choices
from bot.memory.clock import Clock
from bot.memory.coherence import ChangeFeed, Generations
from bot.memory.intake.channels import ChannelScopes
from bot.memory.intake.window import ChannelWindow
from db import changes, deletion, maintenance
from db import vectors as vector_rows
from db.busy import retry_busy
from db.changes import Change
from db.ingest_rows import Touched

log = logging.getLogger(__name__)
SCRUB_DELAY_SECONDS = 5.0
NAMES_CHANGED = frozenset({"forget_member", "purge_guild", "names"})  # changes that remove or add names in bulk
# Changes that remove messages (or statements in them): the window and vectors of the guild are rebuilt.
MESSAGES_GONE = frozenset({"forget_member", "purge_guild", "purge_channel", "purge_before", "forget"})
CHOICES_CHANGED = frozenset({"optout", "purge_guild", "forget_member", "timezone"})


@dataclass(frozen=True, slots=True)
class Invalidation:
    """What changed in a guild (about one member, or None), as the change log names it."""

    guild_id: int
    user_id: int | None
    what: str
    messages_gone: bool = False  # messages were deleted or rewritten in bulk
    names_changed: bool = False  # names were removed or added in bulk


Drop = Callable[[Invalidation], None]


class Changes:
    """The one owner of "after a change": log, drop every registered cache, follow others, scrub."""

    def __init__(
        self,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        *,
        choices: Choices,
        channels: ChannelScopes,
        window: ChannelWindow,
        compact_seconds: Callable[[], float],
        fault: Fault | None = None,
    ) -> None:
        self._engine = engine
        self._sessions = sessions
        self._clock = clock
        self._choices = choices
        self._channels = channels
        self._window = window
        self.generations = Generations()
        self.feed = ChangeFeed(engine, sessions, self._remote, fault=fault)
        self._drops: list[Drop] = []
        self._removed_vectors: list[Callable[[int, list[int]], None]] = []
        # After deletions: the write-ahead log scrubbed, and (SQLite) the file rewritten, once for a burst.
        self._scrub = Debounced(lambda: maintenance.scrub(engine), lambda: SCRUB_DELAY_SECONDS, name="elefant-scrub")
        self._compaction = Debounced(self._compact, compact_seconds, name="elefant-compact")

    @property
    def origin(self) -> str:
        """This process, as the change log names it."""
        return self.feed.origin

    def on_change(self, drop: Drop) -> None:
        """Call `drop` after every change here or in another process (a cache's way to stay true)."""
        self._drops.append(drop)

    def on_vectors_removed(self, remove: Callable[[int, list[int]], None]) -> None:
        """Call `remove(guild_id, message_ids)` when messages were edited or re-kinded (their vectors went)."""
        self._removed_vectors.append(remove)

    async def start(self, *, background: bool) -> None:
        """Follow other processes; with `background`, finish a compaction a stop left."""
        await self.feed.start()
        if background and await maintenance.needs_compacting(self._engine):
            self._schedule_compaction()

    async def record(self, session: AsyncSession, guild_id: int, user_id: int | None, what: str) -> None:
        """Log a change inside the caller's transaction (other processes follow it once it commits)."""
        await changes.record(session, guild_id, user_id, what, origin=self.origin, at=self._clock.now())

    async def changed(self, guild_id: int, user_id: int | None, what: str) -> None:
        """Log a change for other processes and drop what this one cached."""

        async def log_it() -> None:
            async with self._sessions() as session, session.begin():
                await self.record(session, guild_id, user_id, what)

        await retry_busy(log_it)
        self.invalidate(guild_id, user_id, what)

    def invalidate(self, guild_id: int, user_id: int | None, what: str, *, messages_gone: bool = False) -> None:
        """Drop everything this process cached that the change may have made false.

        `messages_gone`: the guild's vector index is rebuilt (deleted messages never reach anyone anyway:
        candidates are read back through SQL).
        """
        self.generations.bump(guild_id)  # builds running now will neither cache nor store their result
        # Reading a guild's names again costs a reply ~100 ms at 20 k: only after bulk changes of names.
        event = Invalidation(guild_id, user_id, what, messages_gone, what in NAMES_CHANGED)
        for drop in self._drops:
            drop(event)

    async def deleted(self, guild_id: int, user_id: int | None, what: str, *, member_lines: bool = False) -> None:
        """An explicit deletion committed: caches dropped, the log scrubbed now, the file rewritten later.

        `member_lines`: only the member's lines (and replies built on their data) leave the recent-lines window;
        otherwise the window cannot tell which lines went and drops the guild's.
        """
        self._window.drop(guild_id, user_id if member_lines else None)
        self.invalidate(guild_id, user_id, what, messages_gone=what != "channel")
        await maintenance.scrub(self._engine)
        self._schedule_compaction()

    async def _remote(self, change: Change) -> None:
        """Another process changed memory: follow it."""
        if change.what in CHOICES_CHANGED:
            await self._choices.load()
        if change.what == "channel":
            await self._channels.load()
        if change.what in MESSAGES_GONE | {"messages"}:
            self._window.drop(change.guild_id, None)  # the window cannot tell which lines went
        self.invalidate(change.guild_id, change.user_id, change.what, messages_gone=change.what in MESSAGES_GONE)

    async def after_writes(self, touched: list[Touched]) -> None:
        """Edits, deletes and re-kindings were stored: drop what was built from the old text, everywhere."""
        by_guild: dict[int, list[Touched]] = {}
        for row in touched:
            by_guild.setdefault(row.guild_id, []).append(row)
        for guild_id, rows in by_guild.items():
            ids = [r.message_id for r in rows]
            await retry_busy(partial(self._drop_derived, guild_id, rows))  # one transaction, run again if busy
            self.invalidate(guild_id, None, "messages")
            for remove in self._removed_vectors:
                remove(guild_id, ids)
        # Deleted in Discord: compact soon (one scrub for a burst of deletes), not on every event.
        self._scrub.request()
        self._schedule_compaction()

    async def _drop_derived(self, guild_id: int, rows: list[Touched]) -> None:
        counts: Counter[str] = Counter()
        ids = [r.message_id for r in rows]
        async with self._sessions() as session, session.begin():
            await changes.lock_guild(session, guild_id)
            await deletion.drop_derived(session, guild_id, deletion.utc_days(r.at for r in rows), counts)
            await deletion.drop_replies(session, guild_id, messages=ids, counts=counts)
            await vector_rows.forget(session, ids)  # new text: embedded again
            await self.record(session, guild_id, None, "messages")

    def _schedule_compaction(self) -> None:
        """Rewrite the SQLite file SQLITE_COMPACT_SECONDS after deletions or edits (once for a burst of them)."""
        if self._engine.dialect.name == "sqlite":
            self._compaction.request()

    async def _compact(self) -> None:
        try:
            await maintenance.compact(self._engine)
        except Exception:  # the rows are gone already; the bytes go at the next compaction
            log.exception("rewriting the database file after deletions failed; trying again at the next start")

    async def compact_pending(self) -> None:
        """Rewrite the file now if deletions are waiting for it (a stop, a purge from the command line, tests)."""
        await self._compaction.now()

    async def flush(self) -> None:
        """Run a pending scrub now."""
        await self._scrub.now()

    async def close(self) -> None:
        """Stop following others; finish a pending rewrite of the file."""
        await self.feed.close()
        await self._scrub.cancel()
        if self._compaction.pending:
            log.info("rewriting the database file so that what was deleted leaves it")
            await self.compact_pending()
