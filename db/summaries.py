"""Data access for the transient track: a guild-day's messages, stored daily and historical summaries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.models import Base, ChatMessage, DailySummary, HistoricalSummary, Rollup
from db.scope import Scope
from db.upsert import dialect_insert


async def day_messages(
    session: AsyncSession, guild_id: int, start: datetime, end: datetime
) -> list[tuple[datetime, int, str]]:
    """(timestamp, user_id, text) of what a guild's members said in shared channels in [start, end), oldest first.

    The read scope's summary input: no opted-out members, no private or excluded channels, no commands to the
    bot and none of its replies.
    """
    rows = await session.execute(
        select(ChatMessage.timestamp, ChatMessage.user_id, ChatMessage.message_text)
        .where(
            scoping.clause(scoping.SUMMARY_INPUT, "chat_history", Scope(guild_id)),
            ChatMessage.timestamp >= start,
            ChatMessage.timestamp < end,
        )
        .order_by(ChatMessage.timestamp, ChatMessage.message_id)
    )
    return [(ts, user_id, text) for ts, user_id, text in rows]


async def member_messages(
    session: AsyncSession, guild_id: int, user_id: int, start: datetime, end: datetime
) -> list[tuple[datetime, int, str]]:
    """What one member said in [start, end), as `day_messages` reads it for a summary (same scope), oldest first."""
    rows = await session.execute(
        select(ChatMessage.timestamp, ChatMessage.user_id, ChatMessage.message_text)
        .where(
            scoping.clause(scoping.SUMMARY_INPUT, "chat_history", Scope(guild_id)),
            ChatMessage.user_id == user_id,
            ChatMessage.timestamp >= start,
            ChatMessage.timestamp < end,
        )
        .order_by(ChatMessage.timestamp, ChatMessage.message_id)
    )
    return [(ts, user, text) for ts, user, text in rows]


async def has_messages(session: AsyncSession, guild_id: int, start: datetime, end: datetime) -> bool:
    """Whether the guild said anything a summary is built from in [start, end)."""
    found = await session.scalar(
        select(ChatMessage.message_id)
        .where(
            scoping.clause(scoping.SUMMARY_INPUT, "chat_history", Scope(guild_id)),
            ChatMessage.timestamp >= start,
            ChatMessage.timestamp < end,
        )
        .limit(1)
    )
    return found is not None


async def first_message_at(session: AsyncSession, guild_id: int) -> datetime | None:
    """When the guild's oldest stored message was written (no day before it needs a summary)."""
    return await session.scalar(select(func.min(ChatMessage.timestamp)).where(ChatMessage.guild_id == guild_id))


async def summarised_days(session: AsyncSession, guild_id: int, since: date) -> set[date]:
    """The days from `since` on whose summaries are stored (a day summarised as empty included)."""
    rows = await session.scalars(
        select(DailySummary.day).where(DailySummary.guild_id == guild_id, DailySummary.day >= since).distinct()
    )
    return set(rows)


async def guilds(session: AsyncSession) -> list[int]:
    """Every guild with stored messages: one index probe per guild (a skip scan), not a scan of the table."""
    ids = select(func.min(ChatMessage.guild_id).label("id")).cte("guild_ids", recursive=True)
    following = select(
        select(func.min(ChatMessage.guild_id)).where(ChatMessage.guild_id > ids.c.id).scalar_subquery()
    ).where(ids.c.id.is_not(None))
    ids = ids.union_all(following)
    return [g for g in (await session.scalars(select(ids.c.id).where(ids.c.id.is_not(None)))) if g is not None]


async def stored_day(session: AsyncSession, guild_id: int, day: date) -> dict[int, str] | None:
    """The stored summaries of a past day (the derived read scope: no opted-out members), or None when the day
    was never summarised.

    One statement: the day's rows, each with whether the scope lets it be read. Two (the readable rows, then
    whether any row exists) could see a day committed between them as summarised with nothing readable: on
    PostgreSQL each statement reads what was committed before it, and a process waiting for another's build
    read `{}` (tests/memory/summaries/test_claims.py)."""
    readable = case((scoping.clause(scoping.DERIVED, "daily_summaries", Scope(guild_id)), True), else_=False)
    rows = (
        await session.execute(
            select(DailySummary.user_id, DailySummary.summary, readable).where(
                DailySummary.guild_id == guild_id, DailySummary.day == day
            )
        )
    ).all()
    if not rows:
        return None
    return {user_id: summary for user_id, summary, visible in rows if visible}


async def save_day(
    session: AsyncSession,
    guild_id: int,
    day: date,
    summaries: dict[int, str],
    *,
    model: str,
    version: str,
    at: datetime,
) -> None:
    """Persist a past day's summaries; a second process that got there first wins (same day, same input)."""
    if not summaries:
        return
    rows = [
        {
            "guild_id": guild_id,
            "day": day,
            "user_id": user_id,
            "summary": text,
            "model": model,
            "prompt_version": version,
            "created_at": at,
        }
        for user_id, text in summaries.items()
    ]
    # Rows as parameters (executemany), not one VALUES clause: a 200-member day compiled its own 1,400-parameter
    # statement each time, a fifth of a second of CPU per guild-day; this form is compiled once and cached.
    stmt = dialect_insert(session, DailySummary).on_conflict_do_nothing(index_elements=["guild_id", "day", "user_id"])
    await session.execute(stmt, rows)


async def stored_history(session: AsyncSession, guild_id: int, user_id: int, end_date: date) -> str | None:
    """A stored historical summary, or None."""
    return await session.scalar(
        select(HistoricalSummary.summary).where(
            scoping.clause(scoping.DERIVED, "historical_summaries", Scope(guild_id)),
            HistoricalSummary.user_id == user_id,
            HistoricalSummary.end_date == end_date,
        )
    )


async def save_history(
    session: AsyncSession,
    guild_id: int,
    user_id: int,
    end_date: date,
    summary: str,
    *,
    model: str,
    version: str,
    at: datetime,
) -> None:
    """Persist a historical summary (first writer wins)."""
    await _first_writer_wins(
        session,
        HistoricalSummary,
        {"guild_id": guild_id, "user_id": user_id, "end_date": end_date},
        summary=summary,
        model=model,
        prompt_version=version,
        created_at=at,
    )


async def _first_writer_wins(
    session: AsyncSession, table: type[Base], key: dict[str, object], **values: object
) -> None:
    """Insert a derived row unless one with the same `key` (its unique columns) exists: two processes may build
    the same period, and what the first stored stands."""
    stmt = dialect_insert(session, table).values(**key, **values)
    await session.execute(stmt.on_conflict_do_nothing(index_elements=list(key)))


def user_ids(rows: Iterable[tuple[datetime, int, str]]) -> set[int]:
    """The authors among a day's rows."""
    return {user_id for _, user_id, _ in rows}


@dataclass(frozen=True, slots=True)
class Period:
    """A calendar week (ISO, Monday first) or month: [start, end)."""

    kind: str
    start: date
    end: date


async def stored_rollup(session: AsyncSession, guild_id: int, user_id: int, period: Period) -> str | None:
    """A stored rollup, or None."""
    return await session.scalar(
        select(Rollup.summary).where(
            scoping.clause(scoping.DERIVED, "rollups", Scope(guild_id)),
            Rollup.user_id == user_id,
            Rollup.period == period.kind,
            Rollup.start_date == period.start,
        )
    )


async def save_rollup(
    session: AsyncSession,
    guild_id: int,
    user_id: int,
    period: Period,
    summary: str,
    *,
    model: str,
    version: str,
    at: datetime,
) -> None:
    """Persist a rollup (first writer wins: same period, same daily summaries)."""
    await _first_writer_wins(
        session,
        Rollup,
        {"guild_id": guild_id, "user_id": user_id, "period": period.kind, "start_date": period.start},
        end_date=period.end,
        summary=summary,
        model=model,
        prompt_version=version,
        created_at=at,
    )
