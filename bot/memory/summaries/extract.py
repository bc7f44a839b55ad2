"""What a reply gets while summaries are still being made: the member's own lines, quoted without a model.

On a guild's first day (a fresh install, or just after an import) nothing is summarised yet, and the model
needs a few rounds to summarise today and the week. A reply does not wait for that: past the latency guard
it gets the facts plus this extract — today's most informative lines, and for each of days 2–7 the stored
summary when the scheduler has made it already, else that day's lines — which improves as the backlog lands.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.offline import summarise_day
from bot.memory.clock import day_bounds, history_days, local_day
from bot.memory.summaries.daily import Summaries
from db import summaries as store


async def extract(
    sessions: async_sessionmaker[AsyncSession], summaries: Summaries, guild_id: int, user_id: int, now: datetime
) -> tuple[str, str]:
    """(today, the week before) for one member, from stored summaries where they exist, else their own lines."""
    zone = summaries.zone(guild_id)
    today = local_day(now, zone)
    days = history_days(today)
    start, _ = day_bounds(days[0], zone)
    async with sessions() as session:  # one indexed read: the member's own week, at most a few hundred rows
        rows = await store.member_messages(session, guild_id, user_id, start, now)
    by_day: dict[date, list[tuple[datetime, int, str]]] = defaultdict(list)
    for row in rows:
        by_day[local_day(row[0], zone)].append(row)

    async def quoted(day: date) -> str:
        if not by_day.get(day):
            return ""
        found = summarise_day(await summaries.lines(guild_id, by_day[day])).summaries
        return found[0].summary if found else ""

    week = []
    for day in days:
        stored = await summaries.stored_day(guild_id, day)
        text = stored.get(user_id, "") if stored is not None else await quoted(day)
        if text:
            week.append(f"On {day}: {text}")
    return await quoted(today), " ".join(week)
