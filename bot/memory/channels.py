"""Channel scoping: what @everyone cannot read stays out of guild-wide memory unless an admin includes it.

Messages from private channels and private threads are stored (scoped to their channel: they still appear in
that channel's own conversation) but never feed summaries, histories, contexts or recall used elsewhere. A
thread follows its own type (private thread: private) and inherits its parent channel's scope. The SQL form
of the same rule is db/scope.py; `shared` here answers for a single channel without a query.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.clock import Clock
from db import channels as store
from db.channels import ChannelRule

Mode = Literal["auto", "include", "exclude"]


class ChannelScopes:
    """Knows which channels are private, their parents, and each channel's admin override; writes only on change."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock
        self._known: dict[tuple[int, int], ChannelRule] = {}

    async def load(self) -> None:
        """Read every known channel (at start-up, and when another process changed one)."""
        async with self._sessions() as session:
            self._known = await store.load(session)

    async def observe(
        self,
        guild_id: int,
        channel_id: int,
        *,
        is_private: bool | None,
        parent_id: int | None = None,
        channel_type: str | None = None,
    ) -> None:
        """Record what a channel is (called as messages arrive; cheap when nothing changed).

        `is_private=None` means the caller cannot tell (an export): a channel known to be private stays so.
        """
        known = self._known.get((guild_id, channel_id))
        if is_private is None:
            is_private = known is not None and known.is_private
        wanted = ChannelRule(is_private, known.mode if known else "auto", parent_id, channel_type)
        if known != wanted:
            await self._save(guild_id, channel_id, wanted)

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
        async with self._sessions() as session, session.begin():
            await store.save(session, guild_id, channel_id, rule, at=self._clock.now())
        self._known[(guild_id, channel_id)] = rule
