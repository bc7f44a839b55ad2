"""What catch-up needs to know of a guild's stored history: where each channel's stored messages end, and which
of them a span holds (to tell which Discord no longer has)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import ChatMessage


async def newest_per_channel(session: AsyncSession, guild_id: int) -> dict[int, int]:
    """Each channel's newest stored message id (channel id -> message id)."""
    rows = await session.execute(
        select(ChatMessage.channel_id, func.max(ChatMessage.message_id))
        .where(ChatMessage.guild_id == guild_id)
        .group_by(ChatMessage.channel_id)
    )
    return {channel: newest for channel, newest in rows}


async def stored_between(session: AsyncSession, channel_id: int, after: int, upto: int) -> set[int]:
    """Ids of a channel's stored messages with `after` < id <= `upto` (ids grow with time: a span of time)."""
    rows = await session.scalars(
        select(ChatMessage.message_id).where(
            ChatMessage.channel_id == channel_id, ChatMessage.message_id > after, ChatMessage.message_id <= upto
        )
    )
    return set(rows)
