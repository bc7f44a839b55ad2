"""A member's data as a Markdown document: facts, every revision, and the summaries about them."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.models import DailySummary, FactRevision, HistoricalSummary, UserFacts


async def member_markdown(sessions: async_sessionmaker[AsyncSession], guild_id: int, user_id: int, name: str) -> str:
    """Everything stored about a member in a guild, as Markdown (messages themselves are not repeated)."""
    async with sessions() as session:
        facts = await session.get(UserFacts, (guild_id, user_id))
        revisions = (
            await session.scalars(
                select(FactRevision)
                .where(FactRevision.guild_id == guild_id, FactRevision.user_id == user_id)
                .order_by(FactRevision.id)
            )
        ).all()
        days = (
            await session.scalars(
                select(DailySummary)
                .where(DailySummary.guild_id == guild_id, DailySummary.user_id == user_id)
                .order_by(DailySummary.day)
            )
        ).all()
        weeks = (
            await session.scalars(
                select(HistoricalSummary)
                .where(HistoricalSummary.guild_id == guild_id, HistoricalSummary.user_id == user_id)
                .order_by(HistoricalSummary.end_date)
            )
        ).all()
    lines = [f"# What Elefant keeps about {name}", "", f"Guild {guild_id}, member {user_id}.", "", "## Facts", ""]
    lines.append(facts.memory_blob if facts and facts.memory_blob else "_Nothing._")
    lines += ["", "## Fact revisions", ""]
    lines += [
        f"- #{r.id} {r.at:%Y-%m-%d %H:%M} UTC, {r.op} (asked by {r.requested_by or 'a deleted member'}): "
        f"{r.new_blob or '_(empty)_'}"
        for r in revisions
    ] or ["_None._"]
    lines += ["", "## Daily summaries", ""]
    lines += [f"- {d.day}: {d.summary or '_(nothing notable)_'}" for d in days] or ["_None._"]
    lines += ["", "## Weekly history", ""]
    lines += [f"- up to {w.end_date}: {w.summary}" for w in weeks] or ["_None._"]
    return "\n".join(lines) + "\n"
