"""Data access for a member's export: everything stored about them in a guild, oldest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db import facts as facts_rows
from db import scope as scoping
from db.facts import Revision
from db.models import DailySummary, HistoricalSummary, Rollup, UserFacts
from db.scope import Scope


@dataclass(frozen=True, slots=True)
class MemberData:
    """What is kept about one member of one guild (their messages are not repeated)."""

    facts: str | None
    revisions: list[Revision]
    days: list[tuple[date, str]]
    weeks: list[tuple[date, str]]  # historical summaries, by their end date
    rollups: list[tuple[str, date, date, str]]  # (week | month, start, end, text)


async def member_data(session: AsyncSession, guild_id: int, user_id: int) -> MemberData:
    """Everything stored about a member (the guild scope: their own data, admin-visible)."""
    in_guild = Scope(guild_id)
    facts = await session.get(UserFacts, (guild_id, user_id))
    days = await session.execute(
        select(DailySummary.day, DailySummary.summary)
        .where(scoping.clause(scoping.GUILD, "daily_summaries", in_guild), DailySummary.user_id == user_id)
        .order_by(DailySummary.day)
    )
    weeks = await session.execute(
        select(HistoricalSummary.end_date, HistoricalSummary.summary)
        .where(scoping.clause(scoping.GUILD, "historical_summaries", in_guild), HistoricalSummary.user_id == user_id)
        .order_by(HistoricalSummary.end_date)
    )
    rollups = await session.execute(
        select(Rollup.period, Rollup.start_date, Rollup.end_date, Rollup.summary)
        .where(scoping.clause(scoping.GUILD, "rollups", in_guild), Rollup.user_id == user_id)
        .order_by(Rollup.start_date, Rollup.period)
    )
    return MemberData(
        facts.memory_blob if facts and facts.memory_blob else None,
        await facts_rows.revisions_of(session, guild_id, user_id),
        [(d, s) for d, s in days],
        [(d, s) for d, s in weeks],
        [(p, a, b, s) for p, a, b, s in rollups],
    )
