"""Data access for per-guild choices: members who opted out, and a guild's own settings (its time zone)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import GuildSettings, UserOptOut
from db.upsert import dialect_insert


async def optouts(session: AsyncSession) -> set[tuple[int, int]]:
    """(guild, member) of everyone who asked not to be stored."""
    rows = await session.execute(select(UserOptOut.guild_id, UserOptOut.user_id))
    return {(g, u) for g, u in rows}


async def opt_out(session: AsyncSession, guild_id: int, user_id: int, *, at: datetime) -> None:
    """Record an opt-out (again is fine, in any process at the same time)."""
    insert = dialect_insert(session, UserOptOut).values(guild_id=guild_id, user_id=user_id, at=at)
    await session.execute(insert.on_conflict_do_nothing())


async def opt_in(session: AsyncSession, guild_id: int, user_id: int) -> None:
    """Remove an opt-out."""
    await session.execute(delete(UserOptOut).where(UserOptOut.guild_id == guild_id, UserOptOut.user_id == user_id))


async def zones(session: AsyncSession) -> dict[int, str]:
    """Guilds that chose their own time zone."""
    rows = await session.execute(
        select(GuildSettings.guild_id, GuildSettings.timezone).where(GuildSettings.timezone.is_not(None))
    )
    return {guild: zone for guild, zone in rows if zone is not None}


async def set_zone(session: AsyncSession, guild_id: int, zone: str, *, at: datetime) -> None:
    """Store a guild's time zone (one statement: another process may create the guild's row at the same time)."""
    insert = dialect_insert(session, GuildSettings).values(guild_id=guild_id, timezone=zone, updated_at=at)
    await session.execute(
        insert.on_conflict_do_update(
            index_elements=["guild_id"], set_={"timezone": insert.excluded.timezone, "updated_at": at}
        )
    )
