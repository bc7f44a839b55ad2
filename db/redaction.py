"""Data access for forgetting a statement: where in a guild it may be written, and rewriting or deleting it.

Finding is broad (members' speech through the full-text index, with every stem as a prefix, since one word's
stems differ between "allergic" and "allergy"; the conversation with the bot, which that index does not hold,
through its own index and the same prefixes); deciding what states the fact is bot/memory/facts/forgetting.py's
job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlalchemy import BigInteger, Integer, String, bindparam, delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from db import tombstones, vectors
from db.models import ChatMessage, DailySummary, DeadLetter, HistoricalSummary, ReplySource, Rollup
from db.records import Kind
from db.types import UTCDateTime

LIMIT = 20_000


@dataclass(frozen=True, slots=True)
class Written:
    """A stored message that may state something."""

    message_id: int
    user_id: int
    kind: int
    text: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Derived:
    """A stored summary, history or rollup of a member."""

    table: str
    id: int
    user_id: int
    text: str
    day: date  # the day (or the first day of the span) it covers


async def messages_with(session: AsyncSession, guild_id: int, stems: list[str]) -> list[Written]:
    """A guild's messages holding, for every prefix, a word (as the index stemmed it) that starts with it."""
    if session.bind.dialect.name == "sqlite":  # type: ignore[union-attr]
        match = " AND ".join(f'body: "{s}"*' for s in stems)
        query = text(f"""
            SELECT c.message_id, c.user_id, c.kind, c.message_text, c.timestamp
            FROM chat_fts CROSS JOIN chat_history AS c ON c.message_id = chat_fts.rowid
            WHERE chat_fts MATCH :match AND c.guild_id = :guild LIMIT {LIMIT}""")
        params: dict[str, object] = {"match": f"scope:g{guild_id} AND {match}", "guild": guild_id}
    else:
        query = text(f"""
            SELECT c.message_id, c.user_id, c.kind, c.message_text, c.timestamp FROM chat_history AS c
            WHERE c.search @@ to_tsquery('simple', :match) AND c.guild_id = :guild LIMIT {LIMIT}""")
        params = {"match": " & ".join(f"{s}:*" for s in stems), "guild": guild_id}
    query = query.bindparams(bindparam("match", type_=String()), bindparam("guild", type_=BigInteger()))
    rows = await session.execute(query.columns(timestamp=UTCDateTime(), kind=Integer()), params)
    speech = [Written(m, u, k, body, at) for m, u, k, body, at in rows]
    return speech + await _conversation_with(session, guild_id, stems)


async def _conversation_with(session: AsyncSession, guild_id: int, stems: list[str]) -> list[Written]:
    """The guild's conversation with the bot (questions, commands, its replies: not in the full-text index) whose
    text holds every prefix, read through the index of those rows alone."""
    sqlite = session.bind.dialect.name == "sqlite"  # type: ignore[union-attr]
    # SQLite's LIKE folds ASCII only: a prefix with another letter is checked below, in Python, alone.
    ascii_stems = [s for s in stems if s.isascii()] if sqlite else stems
    like = "LIKE" if sqlite else "ILIKE"
    holds = "".join(f" AND c.message_text {like} :p{i}" for i in range(len(ascii_stems)))
    query = text(f"""
        SELECT c.message_id, c.user_id, c.kind, c.message_text, c.timestamp FROM chat_history AS c
        WHERE c.guild_id = :guild AND c.kind <> {int(Kind.SPEECH)}{holds} LIMIT {LIMIT}""").bindparams(
        bindparam("guild", type_=BigInteger()), *(bindparam(f"p{i}", type_=String()) for i in range(len(ascii_stems)))
    )
    params: dict[str, object] = {"guild": guild_id} | {f"p{i}": f"%{s}%" for i, s in enumerate(ascii_stems)}
    rows = await session.execute(query.columns(timestamp=UTCDateTime(), kind=Integer()), params)
    return [Written(m, u, k, body, at) for m, u, k, body, at in rows if all(s in body.casefold() for s in stems)]


async def replies_from(session: AsyncSession, guild_id: int, user_id: int) -> set[int]:
    """The bot's stored replies that were built from a member's data."""
    rows = await session.scalars(
        select(ReplySource.reply_id).where(ReplySource.guild_id == guild_id, ReplySource.user_id == user_id)
    )
    return set(rows)


async def derived_of(session: AsyncSession, guild_id: int) -> list[Derived]:
    """Every stored daily summary, history and rollup of a guild that says something."""
    found: list[Derived] = []
    for table, model, day in (
        ("daily_summaries", DailySummary, DailySummary.day),
        ("historical_summaries", HistoricalSummary, HistoricalSummary.end_date),
        ("rollups", Rollup, Rollup.start_date),
    ):
        rows = await session.execute(
            select(model.id, model.user_id, model.summary, day).where(model.guild_id == guild_id, model.summary != "")
        )
        found += [Derived(table, i, u, body, d) for i, u, body, d in rows]
    return found


async def rewrite_message(session: AsyncSession, message_id: int, new_text: str | None) -> None:
    """Store a message's remaining text, or delete it (None). Its vector goes either way (a deleted message's
    by its foreign key): it holds the meaning of the words removed, and the remaining text is embedded again."""
    if new_text is None:
        await tombstones.bury_messages(session, [message_id], at=datetime.now(UTC))  # a replay must not return it
        await session.execute(delete(ChatMessage).where(ChatMessage.message_id == message_id))
        await session.execute(delete(ReplySource).where(ReplySource.reply_id == message_id))
    else:
        await session.execute(
            update(ChatMessage).where(ChatMessage.message_id == message_id).values(message_text=new_text)
        )
        await vectors.forget(session, [message_id])


async def delete_derived(session: AsyncSession, rows: list[Derived]) -> None:
    """Delete stored summaries, histories and rollups (they are rebuilt from what remains)."""
    models: dict[str, type[DailySummary] | type[HistoricalSummary] | type[Rollup]] = {
        "daily_summaries": DailySummary,
        "historical_summaries": HistoricalSummary,
        "rollups": Rollup,
    }
    for table, model in models.items():
        ids = [r.id for r in rows if r.table == table]
        if ids:
            await session.execute(delete(model).where(model.id.in_(ids)))


async def dead_letters_of(session: AsyncSession, guild_id: int) -> list[tuple[int, str]]:
    """(id, payload) of a guild's dead letters."""
    rows = await session.execute(select(DeadLetter.id, DeadLetter.payload).where(DeadLetter.guild_id == guild_id))
    return [(i, p) for i, p in rows]


async def delete_dead_letters(session: AsyncSession, ids: list[int]) -> None:
    """Delete dead letters by id."""
    if ids:
        await session.execute(delete(DeadLetter).where(DeadLetter.id.in_(ids)))
