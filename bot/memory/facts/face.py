"""Facts: the explicit track — what members asked the bot to remember or forget about someone, as revisions.

"Forget that …" also reaches everything else memory keeps that repeats the statement (messages, the bot's
replies, summaries), so a forgotten statement does not come back through another track.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.changes import Changes
from bot.memory.facts.forgetting import Redacted, redact
from bot.memory.facts.store import FactChange, FactsStore, Revision
from bot.memory.names import NameDirectory
from db import changes as change_log
from db.busy import retry_busy


class Facts:
    """Read, change and undo what is explicitly known about members."""

    def __init__(
        self,
        store: FactsStore | None,
        *,
        names: NameDirectory,
        changes: Changes,
        sessions: async_sessionmaker[AsyncSession],
        flush: Callable[[], Awaitable[None]],
    ) -> None:
        self._store = store
        self._names = names
        self._changes = changes
        self._sessions = sessions
        self._flush = flush

    @property
    def store(self) -> FactsStore:
        """The facts track's store; needs a facts model (the LLM, or the offline provider)."""
        if self._store is None:
            raise RuntimeError("memory was built without a facts model")
        return self._store

    async def get(self, guild_id: int, user_id: int) -> str | None:
        """What was explicitly remembered about a member, or None."""
        return await self.store.facts(guild_id, user_id)

    async def cached(self, guild_id: int, user_id: int) -> str | None:
        """Like `get`, from a short-lived cache: for the hot path of a reply."""
        return await self.store.cached_facts(guild_id, user_id)

    def known(self, guild_id: int, user_id: int) -> str | None:
        """The facts this process last read or wrote, without asking the database (for a storage outage)."""
        return self._store.known_facts(guild_id, user_id) if self._store is not None else None

    async def remember(self, guild_id: int, user_id: int, fact: str, *, requested_by: int) -> FactChange:
        """Merge a fact about a member into what is known (newer wins), as a new revision."""
        subject = await self._names.name(guild_id, user_id)
        change = await self.store.remember(guild_id, user_id, fact, requested_by=requested_by, subject=subject)
        if change.changed:
            await self._changes.changed(guild_id, user_id, "facts")
        return change

    async def forget(self, guild_id: int, user_id: int, fact: str, *, requested_by: int) -> FactChange:
        """Forget a statement about a member: from the facts and from everything memory keeps that repeats it.

        `.found` says whether it was anywhere; `.redacted` counts the messages, replies and summaries it left
        (their days' summaries and the facts' history are cleaned too).
        """
        subject = await self._names.name(guild_id, user_id)
        change = await self.store.forget(guild_id, user_id, fact, requested_by=requested_by, subject=subject)
        await self._flush()  # what is still queued (the command itself) is redacted too

        async def redacting() -> Redacted:
            async with self._sessions() as session, session.begin():
                await change_log.lock_guild(session, guild_id)
                done = await redact(session, guild_id, user_id, [subject], fact)
                if done.anything or change.changed:
                    await self._changes.record(session, guild_id, user_id, "forget")
            return done

        done = await retry_busy(redacting)  # one transaction: run again whole if the database was busy
        await self._changes.deleted(guild_id, user_id, "forget")  # the statement may be in any line of the guild
        redacted = done.counts["messages"] + done.counts["bot_replies"] + done.counts["summaries"]
        return FactChange(
            change.before, change.after, change.revision_id, found=change.found or redacted > 0, redacted=redacted
        )

    async def history(self, guild_id: int, user_id: int, *, limit: int = 25) -> list[Revision]:
        """Revisions of a member's facts, newest first."""
        return await self.store.history(guild_id, user_id, limit=limit)

    async def revert(self, guild_id: int, user_id: int, revision_id: int, *, requested_by: int) -> FactChange:
        """Undo a revision (restore the blob as it was before it), recorded as a new revision."""
        change = await self.store.revert(guild_id, user_id, revision_id, requested_by=requested_by)
        if change.changed:
            await self._changes.changed(guild_id, user_id, "facts")
        return change
