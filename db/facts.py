"""Data access for the facts track: the blob per member, its revisions, and the compare-and-swap that changes it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import FactRevision, UserFacts
from db.upsert import dialect_insert


@dataclass(frozen=True, slots=True)
class Revision:
    """One change of a facts blob."""

    id: int
    op: str
    old_blob: str
    new_blob: str
    requested_by: int
    at: datetime


def _revision(row: FactRevision) -> Revision:
    return Revision(row.id, row.op, row.old_blob, row.new_blob, row.requested_by, row.at)


async def blob(session: AsyncSession, guild_id: int, user_id: int) -> str | None:
    """The stored facts about a member, or None."""
    row = await session.get(UserFacts, (guild_id, user_id))
    return row.memory_blob if row and row.memory_blob else None


async def blob_at(session: AsyncSession, guild_id: int, user_id: int, at: datetime) -> str | None:
    """The facts about a member as they stood at `at` (its newest revision by then), or None."""
    found = await session.scalar(
        select(FactRevision.new_blob)
        .where(FactRevision.guild_id == guild_id, FactRevision.user_id == user_id, FactRevision.at <= at)
        .order_by(FactRevision.id.desc())
        .limit(1)
    )
    return found or None


async def history(session: AsyncSession, guild_id: int, user_id: int, *, limit: int) -> list[Revision]:
    """A member's revisions, newest first."""
    rows = await session.scalars(
        select(FactRevision)
        .where(FactRevision.guild_id == guild_id, FactRevision.user_id == user_id)
        .order_by(FactRevision.id.desc())
        .limit(limit)
    )
    return [_revision(r) for r in rows]


async def revision(session: AsyncSession, guild_id: int, user_id: int, revision_id: int) -> Revision | None:
    """One revision of this member of this guild, or None."""
    row = await session.get(FactRevision, revision_id)
    if row is None or (row.guild_id, row.user_id) != (guild_id, user_id):
        return None
    return _revision(row)


async def swap(
    session: AsyncSession,
    *,
    guild_id: int,
    user_id: int,
    op: str,
    before: str,
    after: str,
    requested_by: int,
    at: datetime,
) -> int | None:
    """Write `after` only if the blob is still `before`, with its revision; the revision id, or None on a conflict.

    A single conditional UPDATE (or an INSERT that fails when someone else created the row) is atomic on SQLite
    too, where a SELECT would run outside the transaction. Call inside `session.begin()`.
    """
    swapped = await session.execute(
        update(UserFacts)
        .where(UserFacts.guild_id == guild_id, UserFacts.user_id == user_id, UserFacts.memory_blob == before)
        .values(memory_blob=after, updated_at=at)
    )
    if swapped.rowcount != 1:  # type: ignore[attr-defined]
        if before:
            return None
        created = await session.execute(
            dialect_insert(session, UserFacts)
            .values(guild_id=guild_id, user_id=user_id, memory_blob=after, updated_at=at)
            .on_conflict_do_nothing(index_elements=["guild_id", "user_id"])
        )
        if created.rowcount != 1:  # type: ignore[attr-defined]
            return None  # another process created the row first: the caller merges again on top of theirs
    row = FactRevision(
        guild_id=guild_id, user_id=user_id, op=op, old_blob=before, new_blob=after, requested_by=requested_by, at=at
    )
    session.add(row)
    await session.flush()
    return row.id


async def revisions_of(session: AsyncSession, guild_id: int, user_id: int) -> list[Revision]:
    """Every revision of a member, oldest first (for redaction and export)."""
    rows = await session.scalars(
        select(FactRevision)
        .where(FactRevision.guild_id == guild_id, FactRevision.user_id == user_id)
        .order_by(FactRevision.id)
    )
    return [_revision(r) for r in rows]


async def rewrite_revision(session: AsyncSession, revision_id: int, *, old_blob: str, new_blob: str) -> None:
    """Replace a revision's texts (forgetting a statement removes it from the history too)."""
    await session.execute(
        update(FactRevision).where(FactRevision.id == revision_id).values(old_blob=old_blob, new_blob=new_blob)
    )
