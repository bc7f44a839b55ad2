"""Data access for per-guild choices: members who opted out (now, and the spans they were opted out before), and a
guild's own settings (its time zone)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import GuildSettings, OptOutSpan, UserOptOut
from db.tombstones import member_key
from db.upsert import dialect_insert


async def optouts(session: AsyncSession) -> set[tuple[int, int]]:
    """(guild, member) of everyone who asked not to be stored."""
    rows = await session.execute(select(UserOptOut.guild_id, UserOptOut.user_id))
    return {(g, u) for g, u in rows}


async def opt_out(session: AsyncSession, guild_id: int, user_id: int, *, at: datetime) -> None:
    """Record an opt-out (again is fine, in any process at the same time)."""
    insert = dialect_insert(session, UserOptOut).values(guild_id=guild_id, user_id=user_id, at=at)
    await session.execute(insert.on_conflict_do_nothing())


async def opt_in(session: AsyncSession, guild_id: int, user_id: int, *, at: datetime) -> None:
    """Remove an opt-out, keeping the span it lasted (to `at`): what was said in it is never stored later."""
    mine = (UserOptOut.guild_id == guild_id, UserOptOut.user_id == user_id)
    since = await session.scalar(delete(UserOptOut).where(*mine).returning(UserOptOut.at))  # one process gets it
    if since is None:  # not opted out (or another process opted them in first, and kept the span)
        return
    span = dict(guild_id=guild_id, member_key=member_key(guild_id, user_id), since=since, until=max(since, at))
    await session.execute(dialect_insert(session, OptOutSpan).values(**span).on_conflict_do_nothing())


async def optout_spans(session: AsyncSession) -> dict[tuple[int, int], tuple[tuple[datetime, datetime], ...]]:
    """(guild, member's digest) -> the closed spans they were opted out, oldest first."""
    rows = await session.execute(
        select(OptOutSpan.guild_id, OptOutSpan.member_key, OptOutSpan.since, OptOutSpan.until).order_by(
            OptOutSpan.since
        )
    )
    spans: dict[tuple[int, int], tuple[tuple[datetime, datetime], ...]] = {}
    for guild_id, key, since, until in rows:
        spans[(guild_id, key)] = (*spans.get((guild_id, key), ()), (since, until))
    return spans


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
