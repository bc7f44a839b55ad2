"""What catch-up needs to know of a guild's stored history: where each channel's stored messages end, and which
of them a span holds (to tell which Discord no longer has)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import ChatMessage


async def newest_per_channel(session: AsyncSession, channel_ids: Iterable[int]) -> dict[int, int]:
    """Each listed channel's newest stored message id (channel id -> message id; none stored: absent).

    One max per channel: each is a single seek in the (channel_id, message_id) index, where one grouped query over
    the guild would read every row the guild has (at every READY and RESUMED)."""
    newest: dict[int, int] = {}
    for channel_id in channel_ids:
        newest_id = select(func.max(ChatMessage.message_id)).where(ChatMessage.channel_id == channel_id)
        found = await session.scalar(newest_id)
        if found is not None:
            newest[channel_id] = found
    return newest


async def stored_between(session: AsyncSession, channel_id: int, after: int, upto: int) -> set[int]:
    """Ids of a channel's stored messages with `after` < id <= `upto` (ids grow with time: a span of time)."""
    rows = await session.scalars(
        select(ChatMessage.message_id).where(
            ChatMessage.channel_id == channel_id, ChatMessage.message_id > after, ChatMessage.message_id <= upto
        )
    )
    return set(rows)
