"""Claims with a lease: which process is building a derived thing right now (PostgreSQL, several processes).

A claim is a row (key, owner, expires). Taking it succeeds when there is none, or when the one there has
lapsed; its owner renews it while it works and deletes it when done. Time is the database's own clock, the
one clock every process shares, so hosts whose clocks drift apart still agree on when a lease ran out.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, delete, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import BuildClaim
from db.upsert import dialect_insert

_NOW = {
    "postgresql": "extract(epoch from clock_timestamp())",
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
}


def _now(session: AsyncSession) -> ColumnElement[Any]:
    return literal_column(_NOW[session.bind.dialect.name])  # type: ignore[union-attr]


async def take(session: AsyncSession, key: str, owner: str, *, lease: float) -> bool:
    """Claim `key` for `owner` for `lease` seconds, unless another owner holds it and its lease runs."""
    now = _now(session)
    stmt = dialect_insert(session, BuildClaim).values(key=key, owner=owner, expires=now + lease)
    stmt = stmt.on_conflict_do_update(
        index_elements=["key"],
        set_={"owner": stmt.excluded.owner, "expires": stmt.excluded.expires},
        where=BuildClaim.expires < now,  # a lapsed claim: its owner died or stalled
    ).returning(BuildClaim.owner)
    return (await session.scalar(stmt)) == owner


async def renew(session: AsyncSession, key: str, owner: str, *, lease: float) -> bool:
    """Extend `owner`'s claim; False when it is no longer theirs (it lapsed and another took it)."""
    result = await session.execute(
        update(BuildClaim).where(BuildClaim.key == key, BuildClaim.owner == owner).values(expires=_now(session) + lease)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def release(session: AsyncSession, key: str, owner: str) -> None:
    """Give the claim up (only `owner`'s: a claim taken over after it lapsed stays with its new owner)."""
    await session.execute(delete(BuildClaim).where(BuildClaim.key == key, BuildClaim.owner == owner))


async def held(session: AsyncSession, key: str) -> bool:
    """Whether someone holds a live claim on `key`."""
    found = await session.scalar(
        select(BuildClaim.owner).where(BuildClaim.key == key, BuildClaim.expires >= _now(session))
    )
    return found is not None


async def prune(session: AsyncSession, *, older_than: float) -> int:
    """Drop claims that lapsed more than `older_than` seconds ago (left by processes that crashed)."""
    result = await session.execute(delete(BuildClaim).where(BuildClaim.expires < _now(session) - older_than))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
