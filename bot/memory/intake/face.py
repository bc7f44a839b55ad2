"""Intake: what the front ends (listener, console, importer) hand to memory — messages, edits, deletes, the
bot's own replies, members' names and channels' privacy. Nothing here waits on the database (write-behind).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.changes import Changes
from bot.memory.choices import Choices
from bot.memory.clock import Clock
from bot.memory.intake.channels import ChannelScopes
from bot.memory.intake.counts import StoredCounts
from bot.memory.intake.queue import WriteBehindQueue
from bot.memory.intake.window import ChannelWindow
from bot.memory.names import NameDirectory
from db import history
from db.ingest_rows import DeadLetter
from db.records import (
    MAX_ID,
    IncomingMessage,
    IngestOp,
    Kind,
    MessageDelete,
    MessageEdit,
    RefusedRecordError,
    ReplySource,
    normalised,
)

if TYPE_CHECKING:
    from bot.memory.recall.embedding import EmbeddingWorker
    from bot.memory.summaries.scheduler import SummaryScheduler


class Intake:
    """The way in for everything said in a guild."""

    def __init__(
        self,
        queue: WriteBehindQueue,
        *,
        choices: Choices,
        names: NameDirectory,
        channels: ChannelScopes,
        window: ChannelWindow,
        changes: Changes,
        clock: Clock,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        scheduler: SummaryScheduler | None = None,
        embedding: EmbeddingWorker | None = None,
        kept_from: Callable[[], datetime | None] | None = None,
    ) -> None:
        self._queue = queue
        self._kept_from = kept_from or (lambda: None)  # where retention begins (None: everything is kept)
        self._sessions = sessions
        self._choices = choices
        self._names = names
        self._channels = channels
        self._window = window
        self._changes = changes
        self._clock = clock
        self._scheduler = scheduler
        self._embedding = embedding
        # Whether a channel or thread is private (and a thread's parent), recorded as its messages arrive.
        self.channel = channels.observe

    async def message(self, message: IncomingMessage, *, wait: bool = False, embed_now: bool = True) -> bool:
        """Queue a guild message for storage; False when nothing is kept: its author opted out (or was when they
        said it, or was forgotten since), or retention keeps nothing that old.

        Never waits for storage: a full queue overflows to disk. `wait=True` (the importer, benchmarks) waits
        for room instead, so a bulk load does not outrun the database. `embed_now=False` (an import) leaves the
        message to the embedding backlog, which reads it from the database: noting every message of a large
        export would hold all their text in memory.
        """
        if self._choices.opted_out(message.guild_id, message.author_id):
            return False
        try:
            message = normalised(message, now=self._clock.now())  # type: ignore[assignment]
        except RefusedRecordError as exc:
            await self._queue.put(DeadLetter(message, str(exc)), wait=wait)  # counted and logged once by the queue
            return True
        if self._choices.withheld(message) or self.expired(message.created_at):
            return False
        message = self._choices.unmentioned(message)  # a member forgotten since is no longer named in it
        self._names.note(message.guild_id, message.author_id, message.author_name, message.author_username)
        if self._scheduler is not None:
            self._scheduler.note_guild(message.guild_id)
        self._window.add(message)
        if not self._queue.offer(message):  # the common case costs no extra coroutine
            await self._queue.put(message, wait=wait)
        # Only speech is ever a recall candidate: a question to the bot, or its reply, is not worth a vector.
        if embed_now and self._embedding is not None and message.kind == Kind.SPEECH:
            self._embedding.note(
                message.message_id, message.guild_id, message.content, message.author_id, message.created_at
            )
        return True

    def expired(self, said_at: datetime) -> bool:
        """Whether retention (RETENTION_DAYS) keeps nothing said at `said_at`."""
        kept_from = self._kept_from()
        return kept_from is not None and (said_at if said_at.tzinfo else said_at.replace(tzinfo=UTC)) < kept_from

    async def edit(self, message_id: int, content: str, edited_at: datetime) -> None:
        """Queue new text for a stored message (what was built from the old text follows once it is stored)."""
        edit: IngestOp = MessageEdit(message_id, content, edited_at)
        try:
            edit = normalised(edit, now=self._clock.now())
        except RefusedRecordError as exc:
            if 0 < message_id <= MAX_ID:  # an impossible time: the new words are kept, as any refused record is
                await self._queue.put(DeadLetter(edit, str(exc)))
            return  # (no stored message has an impossible id: such an edit names nothing)
        assert isinstance(edit, MessageEdit)
        self._window.edit(message_id, edit.content)
        await self._queue.put(edit)

    async def delete(self, message_ids: Iterable[int]) -> None:
        """Queue the removal of one or many messages (bulk deletes included) and of what was built from them."""
        ids = tuple(message_ids)
        self._window.delete(ids)
        if ids:
            await self._queue.put(normalised(MessageDelete(ids)))

    async def reply(self, reply: IncomingMessage, *, members: Iterable[int], messages: Iterable[int] = ()) -> bool:
        """Store one of the bot's own replies with what it was built from (members' data, quoted messages).

        A reply built from an opted-out member's data is not stored (False). Deleting any of its sources
        (forget-me, a purge, a Discord delete, "forget that …") deletes the reply too.
        """
        sources, quoted = set(members), set(messages)
        if any(self._choices.opted_out(reply.guild_id, member) for member in sources):
            return False
        try:
            stored = normalised(IncomingMessage(**{**_fields(reply), "kind": Kind.BOT}), now=self._clock.now())
        except RefusedRecordError:
            # Not kept even as a dead letter: a reply is built from members' data, and without its sources no
            # deletion of theirs would find it.
            return False
        self._window.add(reply, members=sources, quoted=quoted)
        await self._queue.put(stored)
        for member in sorted(sources):
            await self._queue.put(ReplySource(reply.message_id, reply.guild_id, user_id=member))
        for message_id in sorted(quoted):
            await self._queue.put(ReplySource(reply.message_id, reply.guild_id, message_id=message_id))
        return True

    async def member(self, guild_id: int, user_id: int, display_name: str, username: str | None) -> None:
        """A member changed their name: resolve and render them by the new one from now on."""
        if self._choices.opted_out(guild_id, user_id):  # not stored, as their messages are not
            return
        self._names.note(guild_id, user_id, display_name, username)
        await self._names.store(guild_id, user_id, display_name, username, at=self._clock.now())

    async def names_stored(self, guild_id: int) -> None:
        """Names were stored in bulk (an import): every process reads the guild's names again."""
        await self._changes.changed(guild_id, None, "names")

    async def newest_stored(self, channel_ids: Iterable[int]) -> dict[int, int]:
        """Each listed channel's newest stored message id, where a catch-up from Discord begins (queued ones land
        first); a channel with none stored is absent."""
        if self._sessions is None:
            return {}
        await self._queue.flush()
        async with self._sessions() as session:
            return await history.newest_per_channel(session, channel_ids)

    async def stored_between(self, channel_id: int, after: int, upto: int) -> set[int]:
        """Ids of a channel's stored messages with `after` < id <= `upto` (a catch-up's span)."""
        if self._sessions is None:
            return set()
        async with self._sessions() as session:
            return await history.stored_between(session, channel_id, after, upto)

    def stored_so_far(self) -> StoredCounts:
        """Messages this process has stored new, found stored already, and kept as dead letters (counters)."""
        stats = self._queue.stats
        return StoredCounts(stats.new_messages, stats.known_messages, stats.dead_letters)


def _fields(message: IncomingMessage) -> dict[str, Any]:
    return {field.name: getattr(message, field.name) for field in fields(message)}
