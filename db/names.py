"""Data access for member names: stored with a case-folded key, so a name is found in any script."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import MemberName
from db.records import NAME_CHARS, clean


def fold(name: str) -> str:
    """The lookup key of a name: casefold() (SQLite's lower() folds ASCII only), cut to the column."""
    return clean(name).strip().casefold()[:NAME_CHARS]


async def store(
    session: AsyncSession, guild_id: int, user_id: int, display_name: str, username: str | None, *, at: datetime
) -> None:
    """Write a member's current name."""
    display = clean(display_name)[:NAME_CHARS]
    user = clean(username)[:NAME_CHARS] if username else None
    await session.merge(
        MemberName(
            guild_id=guild_id,
            user_id=user_id,
            display_name=display,
            username=user,
            updated_at=at,
            display_key=fold(display),
            username_key=fold(user) if user else None,
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
