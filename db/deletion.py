"""Deleting for real: a member's, a channel's, a period's or a guild's rows from every table that holds them.

Summaries are derived from messages, so when messages go, every summary built from those days goes too
(they are recomputed lazily, without the deleted messages).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import date, datetime, timedelta

from sqlalchemy import Date, and_, cast, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from db.models import (
    ChannelPrivacy,
    ChatMessage,
    DailySummary,
    Embedding,
    FactRevision,
    GuildSettings,
    HistoricalSummary,
    LlmCall,
    MemberName,
    Rollup,
    UserFacts,
    UserOptOut,
)

HISTORY_DAYS = 7  # a historical summary ending on day D covers the six days before it
Deletion = Callable[[AsyncSession], Awaitable[Counter[str]]]


async def _days(session: AsyncSession, where: ColumnElement[bool]) -> set[date]:
    """UTC calendar days that have messages matching `where` (a day in any zone overlaps one of these ± 1)."""
    if session.bind.dialect.name == "sqlite":  # type: ignore[union-attr]
        day_of = func.date(ChatMessage.timestamp)  # stored as naive-UTC text
    else:
        day_of = cast(func.timezone("UTC", ChatMessage.timestamp), Date)
    rows = await session.scalars(select(day_of).where(where).distinct())
    days: set[date] = set()
    for value in rows:
        day = value if isinstance(value, date) else date.fromisoformat(str(value)[:10])
        days |= {day - timedelta(days=1), day, day + timedelta(days=1)}
    return days


async def _drop_embeddings(session: AsyncSession, guild_id: int, counts: Counter[str]) -> None:
    """Embeddings are a cache derived from message texts: any deletion in a guild drops the guild's."""
    result = await session.execute(delete(Embedding).where(Embedding.guild_id == guild_id))
    counts["embeddings"] += result.rowcount  # type: ignore[attr-defined]


async def _drop_summaries_of(session: AsyncSession, guild_id: int, days: set[date], counts: Counter[str]) -> None:
    await _drop_embeddings(session, guild_id, counts)
    if not days:
        return
    result = await session.execute(
        delete(DailySummary).where(DailySummary.guild_id == guild_id, DailySummary.day.in_(days))
    )
    counts["daily_summaries"] += result.rowcount  # type: ignore[attr-defined]
    ends = {d + timedelta(days=k) for d in days for k in range(1, HISTORY_DAYS + 1)}
    result = await session.execute(
        delete(HistoricalSummary).where(HistoricalSummary.guild_id == guild_id, HistoricalSummary.end_date.in_(ends))
    )
    counts["historical_summaries"] += result.rowcount  # type: ignore[attr-defined]
    # Rollups are built from daily summaries: any week or month containing an affected day goes too.
    overlaps = or_(*(and_(Rollup.start_date <= d, Rollup.end_date > d) for d in days))
    result = await session.execute(delete(Rollup).where(Rollup.guild_id == guild_id, overlaps))
    counts["rollups"] += result.rowcount  # type: ignore[attr-defined]


def delete_member(*, guild_id: int, user_id: int) -> Deletion:
    """Bind the deletion to its target; run it with a session."""
    return lambda session: _delete_member(session, guild_id, user_id)


async def _delete_member(session: AsyncSession, guild_id: int, user_id: int) -> Counter[str]:
    """Everything about one member in one guild: messages, facts, revisions, names, summaries built on them."""
    counts: Counter[str] = Counter()
    days = await _days(session, and_(ChatMessage.guild_id == guild_id, ChatMessage.user_id == user_id))
    await _drop_summaries_of(session, guild_id, days, counts)
    # Their own summaries on any day, too (they may appear in a day only through others' messages).
    for model, name in (
        (DailySummary, "daily_summaries"),
        (HistoricalSummary, "historical_summaries"),
        (Rollup, "rollups"),
    ):
        result = await session.execute(delete(model).where(model.guild_id == guild_id, model.user_id == user_id))
        counts[name] += result.rowcount  # type: ignore[attr-defined]
    # Changes they asked for about others stay (they are the other member's data) but no longer name them.
    result = await session.execute(
        update(FactRevision)
        .where(FactRevision.guild_id == guild_id, FactRevision.requested_by == user_id)
        .values(requested_by=0)
    )
    counts["fact_revisions_unattributed"] += result.rowcount  # type: ignore[attr-defined]
    for model, name, column in (
        (ChatMessage, "chat_history", ChatMessage.user_id),
        (UserFacts, "user_facts", UserFacts.user_id),
        (FactRevision, "fact_revisions", FactRevision.user_id),
        (MemberName, "member_names", MemberName.user_id),
    ):
        result = await session.execute(delete(model).where(model.guild_id == guild_id, column == user_id))
        counts[name] += result.rowcount  # type: ignore[attr-defined]
    return counts


def delete_channel(*, guild_id: int, channel_id: int) -> Deletion:
    """Bind the deletion to its target; run it with a session."""
    return lambda session: _delete_channel(session, guild_id, channel_id)


async def _delete_channel(session: AsyncSession, guild_id: int, channel_id: int) -> Counter[str]:
    """A channel's messages and every summary built from its days."""
    counts: Counter[str] = Counter()
    where = and_(ChatMessage.guild_id == guild_id, ChatMessage.channel_id == channel_id)
    await _drop_summaries_of(session, guild_id, await _days(session, where), counts)
    counts["chat_history"] += (await session.execute(delete(ChatMessage).where(where))).rowcount  # type: ignore[attr-defined]
    return counts


def drop_channel_summaries(*, guild_id: int, channel_id: int) -> Deletion:
    """Bind it to its target; run it with a session."""
    return lambda session: _drop_channel_summaries(session, guild_id, channel_id)


async def _drop_channel_summaries(session: AsyncSession, guild_id: int, channel_id: int) -> Counter[str]:
    """The summaries of every day a channel has messages (its privacy changed; its messages stay)."""
    counts: Counter[str] = Counter()
    where = and_(ChatMessage.guild_id == guild_id, ChatMessage.channel_id == channel_id)
    await _drop_summaries_of(session, guild_id, await _days(session, where), counts)
    return counts


def delete_before(*, guild_id: int, before: datetime) -> Deletion:
    """Bind the deletion to its target; run it with a session."""
    return lambda session: _delete_before(session, guild_id, before)


async def _delete_before(session: AsyncSession, guild_id: int, before: datetime) -> Counter[str]:
    """Messages older than `before`, and the summaries of those days."""
    counts: Counter[str] = Counter()
    where = and_(ChatMessage.guild_id == guild_id, ChatMessage.timestamp < before)
    await _drop_summaries_of(session, guild_id, await _days(session, where), counts)
    counts["chat_history"] += (await session.execute(delete(ChatMessage).where(where))).rowcount  # type: ignore[attr-defined]
    return counts


def delete_guild(*, guild_id: int) -> Deletion:
    """Bind the deletion to its target; run it with a session."""
    return lambda session: _delete_guild(session, guild_id)


async def _delete_guild(session: AsyncSession, guild_id: int) -> Counter[str]:
    """Everything the bot keeps about a guild."""
    counts: Counter[str] = Counter()
    for model in (
        ChatMessage,
        UserFacts,
        FactRevision,
        DailySummary,
        HistoricalSummary,
        Rollup,
        MemberName,
        GuildSettings,
        UserOptOut,
        ChannelPrivacy,
        LlmCall,
        Embedding,
    ):
        result = await session.execute(delete(model).where(model.guild_id == guild_id))  # type: ignore[attr-defined]
        counts[model.__tablename__] += result.rowcount  # type: ignore[attr-defined]
    return counts


async def remaining(session: AsyncSession, guild_id: int, user_id: int) -> dict[str, int]:
    """Rows still holding a member's data (for tests and /memory stats)."""
    checks = {
        "chat_history": select(func.count()).where(ChatMessage.guild_id == guild_id, ChatMessage.user_id == user_id),
        "user_facts": select(func.count()).where(UserFacts.guild_id == guild_id, UserFacts.user_id == user_id),
        "fact_revisions": select(func.count()).where(
            FactRevision.guild_id == guild_id, FactRevision.user_id == user_id
        ),
        "daily_summaries": select(func.count()).where(
            DailySummary.guild_id == guild_id, DailySummary.user_id == user_id
        ),
        "historical_summaries": select(func.count()).where(
            HistoricalSummary.guild_id == guild_id, HistoricalSummary.user_id == user_id
        ),
        "rollups": select(func.count()).where(Rollup.guild_id == guild_id, Rollup.user_id == user_id),
        "member_names": select(func.count()).where(MemberName.guild_id == guild_id, MemberName.user_id == user_id),
    }
    return {name: (await session.scalar(query)) or 0 for name, query in checks.items()}


WORDS = {
    "chat_history": "messages",
    "user_facts": "facts entries",
    "fact_revisions": "fact revisions",
    "daily_summaries": "daily summaries",
    "historical_summaries": "weekly histories",
    "rollups": "rollups",
    "member_names": "names",
    "fact_revisions_unattributed": "revisions no longer attributed",
    "llm_calls": "usage records",
    "channel_privacy": "channel settings",
    "embeddings": "cached embeddings",
    "guild_settings": "settings",
    "user_optouts": "opt-outs",
}


def rows_in_words(counts: Counter[str]) -> str:
    """'2 messages, 1 facts entries, …': the rows a deletion reports, in words people use."""
    order = list(WORDS)
    parts = [
        f"{n:,} {WORDS.get(table, table.replace('_', ' '))}"
        for table, n in sorted(counts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in WORDS else 99)
        if n
    ]
    return ", ".join(parts) if parts else "nothing (no rows matched)"
