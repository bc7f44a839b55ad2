"""Channel scoping: what @everyone cannot read stays out of guild-wide memory unless an admin includes it.

Messages from private channels are stored (scoped to their channel: they still appear in that channel's own
conversation window) but never feed summaries, histories or contexts used elsewhere.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.clock import Clock
from db.models import ChannelPrivacy

Mode = Literal["auto", "include", "exclude"]


class ChannelScopes:
    """Knows which channels are private, and each channel's admin override; writes only on change."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock
        self._known: dict[tuple[int, int], tuple[bool, str]] = {}

    async def load(self) -> None:
        """Read every known channel once at start-up."""
        async with self._sessions() as session:
            rows = await session.execute(
                select(
                    ChannelPrivacy.guild_id, ChannelPrivacy.channel_id, ChannelPrivacy.is_private, ChannelPrivacy.mode
                )
            )
            self._known = {(g, c): (p, m) for g, c, p, m in rows}

    async def observe(self, guild_id: int, channel_id: int, *, is_private: bool) -> None:
        """Record whether @everyone can read a channel (called as messages arrive; cheap when unchanged)."""
        known = self._known.get((guild_id, channel_id))
        if known is not None and known[0] == is_private:
            return
        await self._save(guild_id, channel_id, is_private, known[1] if known else "auto")

    async def set_mode(self, guild_id: int, channel_id: int, mode: Mode) -> None:
        """An admin's choice: include or exclude a channel regardless of its permissions, or back to auto."""
        known = self._known.get((guild_id, channel_id))
        await self._save(guild_id, channel_id, known[0] if known else False, mode)

    def shared(self, guild_id: int, channel_id: int) -> bool:
        """Whether the channel's messages may feed guild-wide memory."""
        is_private, mode = self._known.get((guild_id, channel_id), (False, "auto"))
        return mode == "include" or (mode == "auto" and not is_private)

    async def _save(self, guild_id: int, channel_id: int, is_private: bool, mode: str) -> None:
        async with self._sessions() as session, session.begin():
            await session.merge(
                ChannelPrivacy(
                    guild_id=guild_id,
                    channel_id=channel_id,
                    is_private=is_private,
                    mode=mode,
                    updated_at=self._clock.now(),
                )
            )
        self._known[(guild_id, channel_id)] = (is_private, mode)
