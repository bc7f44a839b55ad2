"""Data access for per-guild choices: members who opted out, and a guild's own settings (its time zone)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import GuildSettings, UserOptOut


async def optouts(session: AsyncSession) -> set[tuple[int, int]]:
    """(guild, member) of everyone who asked not to be stored."""
    rows = await session.execute(select(UserOptOut.guild_id, UserOptOut.user_id))
    return {(g, u) for g, u in rows}


async def opt_out(session: AsyncSession, guild_id: int, user_id: int, *, at: datetime) -> None:
    """Record an opt-out (again is fine)."""
    await session.merge(UserOptOut(guild_id=guild_id, user_id=user_id, at=at))


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
    """Store a guild's time zone."""
    row = await session.get(GuildSettings, guild_id)
    if row is None:
        session.add(GuildSettings(guild_id=guild_id, timezone=zone, updated_at=at))
    else:
        row.timezone, row.updated_at = zone, at
