"""Data access for member names: stored with a case-folded key, so a name is found in any script."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import MemberName
from db.records import NAME_CHARS, clean
from db.upsert import dialect_insert


def fold(name: str) -> str:
    """The lookup key of a name: casefold() (SQLite's lower() folds ASCII only), cut to the column."""
    return clean(name).strip().casefold()[:NAME_CHARS]


async def store(
    session: AsyncSession, guild_id: int, user_id: int, display_name: str, username: str | None, *, at: datetime
) -> None:
    """Write a member's current name (one statement, as the ingest path does; a newer name is never replaced)."""
    display = clean(display_name)[:NAME_CHARS]
    user = clean(username)[:NAME_CHARS] if username else None
    insert = dialect_insert(session, MemberName).values(
        guild_id=guild_id,
        user_id=user_id,
        display_name=display,
        username=user,
        updated_at=at,
        display_key=fold(display),
        username_key=fold(user) if user else None,
    )
    changed = ("display_name", "username", "updated_at", "display_key", "username_key")
    await session.execute(
        insert.on_conflict_do_update(
            index_elements=["guild_id", "user_id"],
            set_={name: insert.excluded[name] for name in changed},
            where=MemberName.updated_at <= insert.excluded.updated_at,
        )
    )


async def names_since(
    session: AsyncSession, guild_id: int, since: datetime | None
) -> list[tuple[int, str, str | None, datetime]]:
    """A guild's member names stored at or after `since` (None: all): user id, display name, username, when."""
    query = select(MemberName.user_id, MemberName.display_name, MemberName.username, MemberName.updated_at).where(
        MemberName.guild_id == guild_id
    )
    if since is not None:
        query = query.where(MemberName.updated_at >= since)
    return [(user_id, display, username, at) for user_id, display, username, at in await session.execute(query)]


async def count(session: AsyncSession, guild_id: int) -> int:
    """How many member names a guild has stored."""
    return int(await session.scalar(select(func.count()).where(MemberName.guild_id == guild_id)) or 0)


async def matching(session: AsyncSession, guild_id: int, keys: list[str]) -> dict[int, tuple[str, str | None]]:
    """Members whose display name or username folds to one of `keys`: user id -> (display name, username)."""
    rows = await session.execute(
        select(MemberName.user_id, MemberName.display_name, MemberName.username).where(
            MemberName.guild_id == guild_id, or_(MemberName.display_key.in_(keys), MemberName.username_key.in_(keys))
        )
    )
    return {user_id: (display, username) for user_id, display, username in rows}


async def display_names(session: AsyncSession, guild_id: int, user_ids: set[int]) -> dict[int, str]:
    """Display names of those members that have one stored."""
    rows = await session.execute(
        select(MemberName.user_id, MemberName.display_name).where(
            MemberName.guild_id == guild_id, MemberName.user_id.in_(user_ids)
        )
    )
    return {user_id: name for user_id, name in rows}
