"""Counts for /memory stats and `python -m bot stats`."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import ChatMessage, DailySummary, HistoricalSummary, LlmCall, UserFacts


async def guild_stats(session: AsyncSession, guild_id: int, *, now: datetime) -> dict[str, int]:
    """What is stored for a guild, and what the model cost in the last 24 hours."""

    async def scalar(query: object) -> int:
        return int(await session.scalar(query) or 0)  # type: ignore[arg-type]

    since = now - timedelta(hours=24)
    calls = select(func.count(), func.coalesce(func.sum(LlmCall.tokens_in + LlmCall.tokens_out), 0)).where(
        LlmCall.guild_id == guild_id, LlmCall.at >= since
    )
    count_24h, tokens_24h = (await session.execute(calls)).one()
    return {
        "messages": await scalar(select(func.count()).where(ChatMessage.guild_id == guild_id)),
        "members_seen": await scalar(
            select(func.count(func.distinct(ChatMessage.user_id))).where(ChatMessage.guild_id == guild_id)
        ),
        "members_with_facts": await scalar(select(func.count()).where(UserFacts.guild_id == guild_id)),
        "daily_summaries": await scalar(select(func.count()).where(DailySummary.guild_id == guild_id)),
        "historical_summaries": await scalar(select(func.count()).where(HistoricalSummary.guild_id == guild_id)),
        "llm_calls_24h": int(count_24h or 0),
        "llm_tokens_24h": int(tokens_24h or 0),
        "llm_errors_24h": await scalar(
            select(func.count()).where(
                LlmCall.guild_id == guild_id, LlmCall.at >= since, LlmCall.outcome.in_(["error", "skipped"])
            )
        ),
        "database_bytes": await database_bytes(session),
    }


async def database_bytes(session: AsyncSession) -> int:
    """The size of the whole database."""
    if session.bind.dialect.name == "sqlite":  # type: ignore[union-attr]
        pages = await session.scalar(text("PRAGMA page_count"))
        size = await session.scalar(text("PRAGMA page_size"))
        return int(pages or 0) * int(size or 0)
    return int(await session.scalar(text("SELECT pg_database_size(current_database())")) or 0)
