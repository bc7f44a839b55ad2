"""Counts for /memory-admin stats and `python -m bot stats` (the guild scope: admins see their whole guild)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import TextClause, exists, func, or_, select, text, union
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.models import (
    ChannelPrivacy,
    ChatMessage,
    DailySummary,
    DeadLetter,
    FactRevision,
    GuildSettings,
    HistoricalSummary,
    LlmCall,
    MemberName,
    Rollup,
    UserFacts,
    UserOptOut,
)
from db.scope import Scope

# A guild is known while one of these holds a row of it (each is indexed by guild first). The change log is not
# among them: it outlives a purge, and a guild whose data is all gone has nothing to show.
_GUILD_TABLES = (
    ChatMessage,
    UserFacts,
    FactRevision,
    MemberName,
    DailySummary,
    HistoricalSummary,
    Rollup,
    GuildSettings,
    UserOptOut,
    ChannelPrivacy,
    DeadLetter,
    LlmCall,
)


async def guild_stats(session: AsyncSession, guild_id: int, *, now: datetime) -> dict[str, int]:
    """What is stored for a guild, and what the model cost in the last 24 hours."""

    def in_guild(table: str) -> TextClause:
        return scoping.clause(scoping.GUILD, table, Scope(guild_id))

    async def scalar(query: object) -> int:
        return int(await session.scalar(query) or 0)  # type: ignore[call-overload]

    since = now - timedelta(hours=24)
    calls = select(func.count(), func.coalesce(func.sum(LlmCall.tokens_in + LlmCall.tokens_out), 0)).where(
        in_guild("llm_calls"), LlmCall.at >= since
    )
    count_24h, tokens_24h = (await session.execute(calls)).one()
    return {
        "messages": await scalar(select(func.count()).select_from(ChatMessage).where(in_guild("chat_history"))),
        "members_seen": await scalar(
            select(func.count(func.distinct(ChatMessage.user_id))).where(in_guild("chat_history"))
        ),
        "members_with_facts": await scalar(select(func.count()).select_from(UserFacts).where(in_guild("user_facts"))),
        "daily_summaries": await scalar(
            select(func.count()).select_from(DailySummary).where(in_guild("daily_summaries"))
        ),
        "historical_summaries": await scalar(
            select(func.count()).select_from(HistoricalSummary).where(in_guild("historical_summaries"))
        ),
        "rollups": await scalar(select(func.count()).select_from(Rollup).where(in_guild("rollups"))),
        "dead_letters": await scalar(select(func.count()).select_from(DeadLetter).where(in_guild("dead_letters"))),
        "llm_calls_24h": int(count_24h or 0),
        "llm_tokens_24h": int(tokens_24h or 0),
        "llm_errors_24h": await scalar(
            select(func.count()).where(
                in_guild("llm_calls"), LlmCall.at >= since, LlmCall.outcome.in_(["error", "skipped"])
            )
        ),
        "database_bytes": await database_bytes(session),
    }


async def guild_known(session: AsyncSession, guild_id: int) -> bool:
    """Whether anything at all is stored for a guild."""
    return bool(await session.scalar(select(or_(*(exists().where(t.guild_id == guild_id) for t in _GUILD_TABLES)))))


async def some_guilds(session: AsyncSession, *, limit: int) -> list[int]:
    """Up to `limit` guilds this database keeps something about, smallest id first.

    Read from the small per-member and per-guild tables: every stored message also stores its author's name, and
    a distinct scan of the messages themselves grows with the database.
    """
    ids = union(select(MemberName.guild_id), select(UserFacts.guild_id), select(GuildSettings.guild_id)).subquery()
    return list((await session.scalars(select(ids.c.guild_id).order_by(ids.c.guild_id).limit(limit))).all())


async def database_bytes(session: AsyncSession) -> int:
    """The size of the whole database."""
    if session.bind.dialect.name == "sqlite":  # type: ignore[union-attr]
        pages = await session.scalar(text("PRAGMA page_count"))
        size = await session.scalar(text("PRAGMA page_size"))
        return int(pages or 0) * int(size or 0)
    return int(await session.scalar(text("SELECT pg_database_size(current_database())")) or 0)


async def last_message_at(session: AsyncSession, guild_id: int, user_id: int | None = None) -> datetime | None:
    """When a member's (None: anyone's, the bot's replies too) newest stored message was written, or None."""
    query = select(func.max(ChatMessage.timestamp)).where(ChatMessage.guild_id == guild_id)
    if user_id is not None:
        query = query.where(ChatMessage.user_id == user_id)
    return await session.scalar(query)


async def guilds_with_messages_before(session: AsyncSession, cutoff: datetime) -> list[int]:
    """Guilds that keep messages (or dead letters of messages) older than `cutoff` (for retention)."""
    messages = select(ChatMessage.guild_id).where(ChatMessage.timestamp < cutoff)
    refused = select(DeadLetter.guild_id).where(DeadLetter.at < cutoff, DeadLetter.guild_id.is_not(None))
    found = set((await session.scalars(messages.distinct())).all())
    found |= {guild for guild in (await session.scalars(refused.distinct())).all() if guild is not None}
    return sorted(found)
