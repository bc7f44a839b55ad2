"""Deleting for real: a member's, a channel's, a period's or a guild's rows from every table that holds them.

Everything derived from deleted messages goes with them: the summaries of every day they fed (recomputed
lazily, without them), histories and rollups over those days, stored vectors, the bot's own replies that
quoted them or were built from a deleted member's data, and dead letters. Run each deletion inside one
transaction that also holds the guild's lock and logs the change (bot/memory/admin.py and bot/memory/changes.py do).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import Date, Select, and_, cast, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from db import tombstones
from db.mentions import FORMER, unmentioned_payload
from db.models import (
    ChatMessage,
    DailySummary,
    DeadLetter,
    FactRevision,
    HistoricalSummary,
    LlmCall,
    MemberName,
    MemoryChange,
    OptOutSpan,
    ReplySource,
    Rollup,
    UserFacts,
)

HISTORY_DAYS = 7  # a historical summary ending on day D covers the six days before it
Deletion = Callable[[AsyncSession], Awaitable[Counter[str]]]
# What `purge all` keeps: how the guild wants to be remembered, not what it said (privacy must survive a purge).
GUILD_CONFIGURATION = ("channel_privacy", "user_optouts", "optout_spans", "guild_settings")
# Every table a deletion takes rows from or rewrites. The planner's statistics sample their values (names, words,
# member ids) and keep them after the rows are gone, so they are taken again after each deletion (db/maintenance.py).
TOUCHED_TABLES = (
    "chat_history",
    "message_vectors",
    "reply_sources",
    "user_facts",
    "fact_revisions",
    "daily_summaries",
    "historical_summaries",
    "rollups",
    "member_names",
    "llm_calls",
    "dead_letters",
    "memory_changes",
)


def _count(counts: Counter[str], name: str, result: object) -> None:
    counts[name] += int(getattr(result, "rowcount", 0) or 0)


def _shifted(day: date, by: int) -> date:
    """`day` moved by `by` days, held at the calendar's ends: a row stored with a date there (older versions took
    0001-01-01 and 9999-12-31) must not make its own deletion fail."""
    try:
        return day + timedelta(days=by)
    except OverflowError:
        return date.max if by > 0 else date.min


def _around(day: date) -> set[date]:
    return {_shifted(day, -1), day, _shifted(day, 1)}


def utc_days(moments: Iterable[datetime]) -> set[date]:
    """The UTC days of some moments, widened by a day each way (a day in any time zone overlaps one of them)."""
    days: set[date] = set()
    for moment in moments:
        days |= _around(moment.date())
    return days


async def _days(session: AsyncSession, where: ColumnElement[bool]) -> set[date]:
    """UTC calendar days (± 1) that have messages matching `where`."""
    day_of: ColumnElement[Any]
    if session.bind.dialect.name == "sqlite":  # type: ignore[union-attr]
        day_of = func.date(ChatMessage.timestamp)  # stored as naive-UTC text
    else:
        day_of = cast(func.timezone("UTC", ChatMessage.timestamp), Date)
    rows = await session.scalars(select(day_of).where(where).distinct())
    days: set[date] = set()
    for value in rows:
        day = value if isinstance(value, date) else date.fromisoformat(str(value)[:10])
        days |= _around(day)
    return days


async def drop_derived(session: AsyncSession, guild_id: int, days: set[date], counts: Counter[str]) -> None:
    """Everything built from a guild's messages of `days`: summaries, histories over them, rollups.

    (A message's vector goes with the message itself: ON DELETE CASCADE.)
    """
    if not days:
        return
    _count(
        counts,
        "daily_summaries",
        await session.execute(
            delete(DailySummary).where(DailySummary.guild_id == guild_id, DailySummary.day.in_(days))
        ),
    )
    ends = {_shifted(d, k) for d in days for k in range(1, HISTORY_DAYS + 1)}
    _count(
        counts,
        "historical_summaries",
        await session.execute(
            delete(HistoricalSummary).where(
                HistoricalSummary.guild_id == guild_id, HistoricalSummary.end_date.in_(ends)
            )
        ),
    )
    overlaps = or_(*(and_(Rollup.start_date <= d, Rollup.end_date > d) for d in days))
    _count(counts, "rollups", await session.execute(delete(Rollup).where(Rollup.guild_id == guild_id, overlaps)))


async def drop_replies(
    session: AsyncSession,
    guild_id: int,
    *,
    user_id: int | None = None,
    messages: Select[int] | list[int] | None = None,
    counts: Counter[str],
) -> None:
    """The bot's stored replies built from a member's data or quoting the given messages, and their sources."""
    conditions = []
    if user_id is not None:
        conditions.append(ReplySource.user_id == user_id)
    if messages is not None:
        conditions.append(ReplySource.message_id.in_(messages))
    if not conditions:
        return
    replies = select(ReplySource.reply_id).where(ReplySource.guild_id == guild_id, or_(*conditions))
    reply_ids = list((await session.scalars(replies.distinct())).all())
    if reply_ids:
        # A copy still on its way to the database (a queue, a spill file) must not store it again.
        await tombstones.bury_messages(session, reply_ids, at=datetime.now(UTC))
        _count(
            counts,
            "bot_replies",
            await session.execute(
                delete(ChatMessage).where(ChatMessage.guild_id == guild_id, ChatMessage.message_id.in_(reply_ids))
            ),
        )
    gone = ReplySource.reply_id.in_(reply_ids) if reply_ids else ReplySource.reply_id.is_(None)
    await session.execute(delete(ReplySource).where(ReplySource.guild_id == guild_id, or_(gone, *conditions)))


def delete_member(*, guild_id: int, user_id: int, at: datetime) -> Deletion:
    """Bind the deletion to its target (`at`: now; what they said until then can never be stored again)."""
    return lambda session: _delete_member(session, guild_id, user_id, at)


async def _delete_member(session: AsyncSession, guild_id: int, user_id: int, at: datetime) -> Counter[str]:
    """Everything about one member in one guild: messages, facts, revisions, names, summaries built on them."""
    counts: Counter[str] = Counter()
    await tombstones.bury(session, guild_id, tombstones.MEMBER, tombstones.member_key(guild_id, user_id), at)
    mentions_them = and_(ChatMessage.guild_id == guild_id, ChatMessage.message_text.contains(f"{user_id}>"))
    days = await _days(
        session, or_(and_(ChatMessage.guild_id == guild_id, ChatMessage.user_id == user_id), mentions_them)
    )
    await drop_derived(session, guild_id, days, counts)
    await _unmention(session, guild_id, user_id, mentions_them, counts)
    their_messages = select(ChatMessage.message_id).where(
        ChatMessage.guild_id == guild_id, ChatMessage.user_id == user_id
    )
    await drop_replies(session, guild_id, user_id=user_id, messages=their_messages, counts=counts)
    # Their own summaries on any day, too (they may appear in a day only through others' messages).
    for model, name in (
        (DailySummary, "daily_summaries"),
        (HistoricalSummary, "historical_summaries"),
        (Rollup, "rollups"),
    ):
        _count(
            counts,
            name,
            await session.execute(delete(model).where(model.guild_id == guild_id, model.user_id == user_id)),
        )
    # Changes they asked for about others stay (they are the other member's data) but no longer name them.
    _count(
        counts,
        "fact_revisions_unattributed",
        await session.execute(
            update(FactRevision)
            .where(FactRevision.guild_id == guild_id, FactRevision.requested_by == user_id)
            .values(requested_by=0)
        ),
    )
    # The change log keeps which member a change was about only for other processes' caches: not them.
    await session.execute(
        update(MemoryChange)
        .where(MemoryChange.guild_id == guild_id, MemoryChange.user_id == user_id)
        .values(user_id=None)
    )
    await _drop_refused_edits(session, their_messages, counts)
    for table, name, column in (
        (ChatMessage, "chat_history", ChatMessage.user_id),
        (UserFacts, "user_facts", UserFacts.user_id),
        (FactRevision, "fact_revisions", FactRevision.user_id),
        (MemberName, "member_names", MemberName.user_id),
        (DeadLetter, "dead_letters", DeadLetter.user_id),
    ):
        _count(counts, name, await session.execute(delete(table).where(table.guild_id == guild_id, column == user_id)))
    # The spans they were opted out end before now: the tombstone withholds all they said until now anyway.
    key = tombstones.member_key(guild_id, user_id)
    await session.execute(delete(OptOutSpan).where(OptOutSpan.guild_id == guild_id, OptOutSpan.member_key == key))
    return counts


async def _unmention(
    session: AsyncSession, guild_id: int, user_id: int, mentions_them: ColumnElement[bool], counts: Counter[str]
) -> None:
    """Others' messages and dead letters keep their words, but no longer say who was mentioned (a refused edit names
    no guild but its message's); every later write does the same (db/mentions.py)."""
    unnamed = func.replace(func.replace(ChatMessage.message_text, f"<@{user_id}>", FORMER), f"<@!{user_id}>", FORMER)
    rewritten = update(ChatMessage).where(mentions_them, ChatMessage.user_id != user_id).values(message_text=unnamed)
    _count(counts, "mentions_removed", await session.execute(rewritten))
    in_guild = select(ChatMessage.message_id).where(ChatMessage.guild_id == guild_id)
    placed = or_(
        DeadLetter.guild_id == guild_id, and_(DeadLetter.guild_id.is_(None), DeadLetter.message_id.in_(in_guild))
    )
    others = or_(DeadLetter.user_id.is_(None), DeadLetter.user_id != user_id)  # hers go whole, below
    rows = await session.execute(
        select(DeadLetter.id, DeadLetter.payload).where(placed, others, DeadLetter.payload.contains(str(user_id)))
    )
    for dead_id, payload in rows.all():
        clear = unmentioned_payload(payload, lambda mentioned: mentioned == user_id)
        if clear != payload:
            await session.execute(update(DeadLetter).where(DeadLetter.id == dead_id).values(payload=clear))
            counts["mentions_removed"] += 1


def delete_channel(*, guild_id: int, channel_id: int, at: datetime) -> Deletion:
    """Bind the deletion to its target (`at`: now; what was said there until then can never be stored again)."""
    return lambda session: _delete_messages(
        session,
        guild_id,
        and_(ChatMessage.guild_id == guild_id, ChatMessage.channel_id == channel_id),
        DeadLetter.channel_id == channel_id,
        grave=(tombstones.CHANNEL, channel_id, at),
    )


def delete_before(*, guild_id: int, before: datetime) -> Deletion:
    """Bind the deletion to its target; run it with a session."""
    return lambda session: _delete_messages(
        session,
        guild_id,
        and_(ChatMessage.guild_id == guild_id, ChatMessage.timestamp < before),
        DeadLetter.at < before,
        # "at or before" in a tombstone; a message of exactly `before` stays, as here: a microsecond less.
        grave=(tombstones.BEFORE, 0, before - timedelta(microseconds=1)),
    )


async def _delete_messages(
    session: AsyncSession,
    guild_id: int,
    where: ColumnElement[bool],
    dead: ColumnElement[bool],
    *,
    grave: tuple[str, int, datetime],
) -> Counter[str]:
    """Some messages of a guild, everything derived from them, and the dead letters of the same span."""
    counts: Counter[str] = Counter()
    await tombstones.bury(session, guild_id, *grave)
    await drop_derived(session, guild_id, await _days(session, where), counts)
    await drop_replies(session, guild_id, messages=select(ChatMessage.message_id).where(where), counts=counts)
    await _drop_refused_edits(session, select(ChatMessage.message_id).where(where), counts)
    _count(counts, "chat_history", await session.execute(delete(ChatMessage).where(where)))
    _count(
        counts, "dead_letters", await session.execute(delete(DeadLetter).where(DeadLetter.guild_id == guild_id, dead))
    )
    return counts


async def _drop_refused_edits(session: AsyncSession, messages: Select[Any], counts: Counter[str]) -> None:
    """Dead letters of edits to the given messages: a refused edit knows its message, not its guild or author."""
    gone = await session.execute(delete(DeadLetter).where(DeadLetter.message_id.in_(messages)))
    _count(counts, "dead_letters", gone)


async def drop_unplaced_dead_letters(session: AsyncSession, before: datetime) -> Counter[str]:
    """Dead letters older than `before` that name no guild (a refused edit, an impossible guild id): no guild's
    purge finds them, so retention takes them on its own."""
    counts: Counter[str] = Counter()
    gone = delete(DeadLetter).where(DeadLetter.guild_id.is_(None), DeadLetter.at < before)
    _count(counts, "dead_letters", await session.execute(gone))
    return counts


async def drop_optout_spans_before(session: AsyncSession, before: datetime) -> None:
    """Opt-out spans that ended before `before`: retention keeps nothing said in them anyway."""
    await session.execute(delete(OptOutSpan).where(OptOutSpan.until < before))


def drop_channel_summaries(*, guild_id: int, channel_id: int) -> Deletion:
    """Bind it to its target; run it with a session."""
    return lambda session: _drop_channel_summaries(session, guild_id, channel_id)


async def _drop_channel_summaries(session: AsyncSession, guild_id: int, channel_id: int) -> Counter[str]:
    """The summaries of every day a channel has messages (its privacy changed; its messages stay)."""
    counts: Counter[str] = Counter()
    where = and_(ChatMessage.guild_id == guild_id, ChatMessage.channel_id == channel_id)
    await drop_derived(session, guild_id, await _days(session, where), counts)
    return counts


def delete_guild(*, guild_id: int, at: datetime) -> Deletion:
    """Bind the deletion to its target (`at`: now; what was said until then can never be stored again)."""
    return lambda session: _delete_guild(session, guild_id, at)


async def _delete_guild(session: AsyncSession, guild_id: int, at: datetime) -> Counter[str]:
    """Everything the bot keeps of what a guild said; its privacy configuration stays (GUILD_CONFIGURATION)."""
    counts: Counter[str] = Counter()
    await tombstones.bury(session, guild_id, tombstones.BEFORE, 0, at)
    for model in (
        ChatMessage,
        UserFacts,
        FactRevision,
        DailySummary,
        HistoricalSummary,
        Rollup,
        MemberName,
        LlmCall,
        ReplySource,
        DeadLetter,
    ):
        result = await session.execute(delete(model).where(model.guild_id == guild_id))  # type: ignore[attr-defined]
        _count(counts, model.__tablename__, result)  # type: ignore[attr-defined]
    await session.execute(update(MemoryChange).where(MemoryChange.guild_id == guild_id).values(user_id=None))
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
