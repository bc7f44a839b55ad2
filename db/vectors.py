"""Data access for message vectors (int8 × scale per message; deleted with their message by ON DELETE CASCADE)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import ChatMessage, MessageVector
from db.records import Kind


@dataclass(frozen=True, slots=True)
class StoredVector:
    """One stored vector, where it is in the sync order, and who wrote the message when."""

    id: int
    message_id: int
    vector: bytes
    scale: float
    user_id: int
    at: float  # POSIX seconds


@dataclass(frozen=True, slots=True)
class Unembedded:
    """A stored message that has no vector yet."""

    message_id: int
    guild_id: int
    text: str
    user_id: int
    at: datetime


async def of_guild(
    session: AsyncSession, guild_id: int, model: str, *, after: int = 0, limit: int = 50_000
) -> list[StoredVector]:
    """A guild's vectors of one model stored after sync position `after`, in order."""
    rows = await session.execute(
        select(
            MessageVector.id,
            MessageVector.message_id,
            MessageVector.vector,
            MessageVector.scale,
            ChatMessage.user_id,
            ChatMessage.timestamp,
        )
        .join(ChatMessage, ChatMessage.message_id == MessageVector.message_id)
        .where(MessageVector.guild_id == guild_id, MessageVector.model == model, MessageVector.id > after)
        .order_by(MessageVector.id)
        .limit(limit)
    )
    return [StoredVector(i, m, bytes(v), float(s), u, ts.timestamp()) for i, m, v, s, u, ts in rows]


async def unembedded(session: AsyncSession, model: str, *, limit: int) -> list[Unembedded]:
    """People's speech without a vector of `model`, newest first (a fresh install, an import, a new model); what
    is addressed to the bot, or its reply, is never a candidate and is not embedded."""
    rows = await session.execute(
        select(
            ChatMessage.message_id,
            ChatMessage.guild_id,
            ChatMessage.message_text,
            ChatMessage.user_id,
            ChatMessage.timestamp,
        )
        .outerjoin(MessageVector, (MessageVector.message_id == ChatMessage.message_id) & (MessageVector.model == model))
        .where(MessageVector.id.is_(None), ChatMessage.kind == int(Kind.SPEECH))
        .order_by(ChatMessage.message_id.desc())
        .limit(limit)
    )
    return [Unembedded(m, g, t, u, ts) for m, g, t, u, ts in rows]


async def embedded_among(session: AsyncSession, message_ids: Iterable[int], model: str) -> set[int]:
    """Which of the messages already have a vector of `model` (a message read back by catch-up after a restart is
    not embedded again: an edit would have dropped its vector)."""
    ids = list(message_ids)
    if not ids:
        return set()
    rows = await session.scalars(
        select(MessageVector.message_id).where(MessageVector.message_id.in_(ids), MessageVector.model == model)
    )
    return set(rows)


async def unembedded_count(session: AsyncSession, model: str) -> int:
    """How many stored messages of people's speech have no vector of `model` (one of another model is embedded
    again)."""
    return int(
        await session.scalar(
            select(func.count())
            .select_from(ChatMessage)
            .outerjoin(
                MessageVector, (MessageVector.message_id == ChatMessage.message_id) & (MessageVector.model == model)
            )
            .where(MessageVector.id.is_(None), ChatMessage.kind == int(Kind.SPEECH))
        )
        or 0
    )


async def forget(session: AsyncSession, message_ids: Iterable[int]) -> int:
    """Drop the vectors of messages whose text changed (they are embedded again)."""
    ids = list(message_ids)
    if not ids:
        return 0
    result = await session.execute(delete(MessageVector).where(MessageVector.message_id.in_(ids)))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def count(session: AsyncSession, guild_id: int) -> int:
    """How many vectors a guild has."""
    return int(await session.scalar(select(func.count()).where(MessageVector.guild_id == guild_id)) or 0)
