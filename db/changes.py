"""The change log: every change to what memory may say, so derived data and other processes follow it.

Deleting, forgetting, editing or re-scoping appends a row (guild, member if one, what, which process) in the
same transaction as the change. Two things read it:
- derived data (summaries, histories, rollups, vectors) is only stored if no change reached its guild since
  its build began (`unchanged`, under the guild's write lock), so a build racing a deletion cannot write the
  deleted data back;
- other processes poll it (and on PostgreSQL are woken by NOTIFY) and drop what their caches hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import MemoryChange

CHANNEL = "elefant_memory"  # PostgreSQL NOTIFY channel
GUILD_LOCK_CLASS = 0x456C  # first key of the two-int advisory lock; the second is the guild (`guild_lock_key`)
_PG_LOG_LOCK = 0x456E  # the log's writers, one at a time (db/tombstones.py holds 0x456D)


@dataclass(frozen=True, slots=True)
class Change:
    """One logged change."""

    id: int
    guild_id: int
    user_id: int | None
    what: str
    origin: str


def guild_lock_key(guild_id: int) -> tuple[int, int]:
    """A guild's PostgreSQL advisory lock: deletions and derived writes take it alone, ingest batches shared."""
    return GUILD_LOCK_CLASS, guild_id % (2**31)


async def lock_guild(session: AsyncSession, guild_id: int) -> None:
    """Serialise this transaction with every other change or derived write of the guild, in any process."""
    if session.bind.dialect.name == "postgresql":  # type: ignore[union-attr]
        key, guild = guild_lock_key(guild_id)
        await session.execute(text("SELECT pg_advisory_xact_lock(:k, :g)"), {"k": key, "g": guild})
    else:  # SQLite has one writer: a write statement takes the database's write lock until commit
        await session.execute(text("UPDATE memory_changes SET id = id WHERE 0"))


async def latest(session: AsyncSession, guild_id: int) -> int:
    """The id of the guild's newest change (0: none yet)."""
    return int(
        await session.scalar(
            select(func.coalesce(func.max(MemoryChange.id), 0)).where(MemoryChange.guild_id == guild_id)
        )
        or 0
    )


async def unchanged(session: AsyncSession, guild_id: int, seen: int) -> bool:
    """Lock the guild, then tell whether its newest change is still `seen` (derived data may be stored)."""
    await lock_guild(session, guild_id)
    return await latest(session, guild_id) == seen


async def record(
    session: AsyncSession, guild_id: int, user_id: int | None, what: str, *, origin: str, at: datetime
) -> int:
    """Log a change inside the transaction that makes it; other processes hear of it when it commits.

    Readers follow the log by id. On PostgreSQL ids are handed out when a row is inserted, not when it commits,
    so a change could commit after a higher-numbered one that a reader has already passed; the lock makes
    the log's writers take their ids and commit one at a time. (Call this last in the transaction.)
    """
    if session.bind.dialect.name == "postgresql":  # type: ignore[union-attr]
        await session.execute(text("SELECT pg_advisory_xact_lock(:k, 0)"), {"k": _PG_LOG_LOCK})
    row = MemoryChange(guild_id=guild_id, user_id=user_id, what=what[:24], origin=origin[:32], at=at)
    session.add(row)
    await session.flush()
    if session.bind.dialect.name == "postgresql":  # type: ignore[union-attr]
        await session.execute(
            text("SELECT pg_notify(:channel, :payload)"), {"channel": CHANNEL, "payload": str(row.id)}
        )
    return row.id


async def newest(session: AsyncSession) -> int:
    """The newest change id of all guilds (where a process starts listening)."""
    return int(await session.scalar(select(func.coalesce(func.max(MemoryChange.id), 0))) or 0)


async def after(session: AsyncSession, last: int, *, limit: int = 1000) -> list[Change]:
    """Changes newer than `last`, oldest first."""
    rows = await session.execute(
        select(MemoryChange.id, MemoryChange.guild_id, MemoryChange.user_id, MemoryChange.what, MemoryChange.origin)
        .where(MemoryChange.id > last)
        .order_by(MemoryChange.id)
        .limit(limit)
    )
    return [Change(*row) for row in rows]


async def prune(session: AsyncSession, before: datetime) -> int:
    """Drop log rows older than `before`, keeping each guild's newest (derived writes compare against it)."""
    newest_per_guild = select(func.max(MemoryChange.id)).group_by(MemoryChange.guild_id)
    result = await session.execute(
        delete(MemoryChange).where(MemoryChange.at < before, MemoryChange.id.not_in(newest_per_guild))
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
