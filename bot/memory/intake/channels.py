"""Channel scoping: what @everyone cannot read stays out of guild-wide memory unless an admin includes it.

Messages from private channels and private threads are stored (scoped to their channel: they still appear in
that channel's own conversation) but never feed summaries, histories, contexts or recall used elsewhere. A
thread follows its own type (private thread: private) and inherits its parent channel's scope. The SQL form
of the same rule is db/scope.py; `shared` here answers for a single channel without a query.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.clock import Clock
from db import channels as store
from db.channels import ChannelRule
from db.records import RefusedRecordError, valid_id

log = logging.getLogger(__name__)
Mode = Literal["auto", "include", "exclude"]
TYPE_CHARS = 24  # channel_privacy.channel_type


class ChannelScopes:
    """Knows which channels are private, their parents, and each channel's admin override; writes only on change."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock
        self._known: dict[tuple[int, int], ChannelRule] = {}
        self._unsaved: dict[tuple[int, int], ChannelRule] = {}  # observed, not yet written
        self._writing = asyncio.Lock()  # an admin's choice must not be overwritten by an older observation

    async def load(self) -> None:
        """Read every known channel (at start-up, and when another process changed one)."""
        async with self._sessions() as session:
            known = await store.load(session)
        self._known = {**known, **self._unsaved}

    async def observe(
        self,
        guild_id: int,
        channel_id: int,
        *,
        is_private: bool | None,
        parent_id: int | None = None,
        channel_type: str | None = None,
    ) -> None:
        """Record what a channel is, as messages arrive; never waits for storage.

        This process follows a change at once; it is written by `save_pending`, which the ingest writer runs
        before each batch, so no message of a private channel is stored before the rule that keeps it private.
        `is_private=None` means the caller cannot tell (an export): a channel known to be private stays so.
        """
        try:
            for value, what in ((guild_id, "guild id"), (channel_id, "channel id"), (parent_id, "parent id")):
                valid_id(value, what)
        except RefusedRecordError as exc:  # its messages are refused the same way
            log.warning("a channel could not be recorded: %s", exc)
            return
        key = (guild_id, channel_id)
        known = self._known.get(key)
        if is_private is None:
            is_private = known is not None and known.is_private
        kind = channel_type[:TYPE_CHARS] if channel_type else channel_type
        wanted = ChannelRule(is_private, known.mode if known else "auto", parent_id, kind)
        if known != wanted:
            self._known[key] = self._unsaved[key] = wanted

    async def save_pending(self) -> None:
        """Write the observed changes not written yet (raises while storage is unavailable; they stay pending)."""
        if not self._unsaved:
            return
        async with self._writing:
            pending = dict(self._unsaved)
            async with self._sessions() as session, session.begin():
                for (guild_id, channel_id), rule in sorted(pending.items()):  # one row order: no deadlock
                    await store.save(session, guild_id, channel_id, rule, at=self._clock.now(), observed=True)
            for key, rule in pending.items():
                if self._unsaved.get(key) == rule:  # not observed differently meanwhile
                    del self._unsaved[key]

    async def set_mode(self, guild_id: int, channel_id: int, mode: Mode) -> None:
        """An admin's choice: include or exclude a channel regardless of its permissions, or back to auto."""
        known = self._known.get((guild_id, channel_id)) or ChannelRule(False, "auto")
        await self._save(guild_id, channel_id, ChannelRule(known.is_private, mode, known.parent_id, known.channel_type))

    def shared(self, guild_id: int, channel_id: int) -> bool:
        """Whether the channel's messages may feed guild-wide memory."""
        rule = self._known.get((guild_id, channel_id), ChannelRule(False, "auto"))
        if rule.mode != "auto":
            return rule.mode == "include"
        if rule.is_private:
            return False
        parent = self._known.get((guild_id, rule.parent_id)) if rule.parent_id else None
        return parent is None or parent.mode == "include" or (parent.mode == "auto" and not parent.is_private)

    async def _save(self, guild_id: int, channel_id: int, rule: ChannelRule) -> None:
        async with self._writing:
            async with self._sessions() as session, session.begin():
                await store.save(session, guild_id, channel_id, rule, at=self._clock.now())
            self._known[(guild_id, channel_id)] = rule
            self._unsaved.pop((guild_id, channel_id), None)  # this write carries the newest observation too
