"""Data access for stored embeddings (derived from message texts; keyed per guild by content hash and model)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import Embedding
from db.upsert import dialect_insert


async def load(session: AsyncSession, guild_id: int, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
    """Stored vectors (float32 bytes) for the given content hashes."""
    rows = await session.execute(
        select(Embedding.content_hash, Embedding.vector).where(
            Embedding.guild_id == guild_id, Embedding.model == model, Embedding.content_hash.in_(list(hashes))
        )
    )
    return {key: blob for key, blob in rows}


async def save(session: AsyncSession, guild_id: int, model: str, vectors: dict[str, bytes], *, at: datetime) -> None:
    """Store vectors; one already stored by another process stays."""
    if not vectors:
        return
    rows = [
        {"guild_id": guild_id, "content_hash": k, "model": model, "vector": v, "created_at": at}
        for k, v in vectors.items()
    ]
    await session.execute(
        dialect_insert(session, Embedding)
        .values(rows)
        .on_conflict_do_nothing(index_elements=["guild_id", "content_hash", "model"])
    )
