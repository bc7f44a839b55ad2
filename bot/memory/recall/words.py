"""Recall's words half: full-text candidates for a question (everyone's, a named member's own, those about a named
member) and the daily summaries about its words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.search import messages as message_store
from db.search import planner
from db.search import summaries as summary_store
from db.search.types import Search, SummaryRow, Turn

Window = tuple[datetime, datetime]


async def by_words(
    session: AsyncSession,
    search: Search,
    members: dict[int, set[str]],
    window: Window | None,
    summaries: ZoneInfo | None,
    *,
    pool: int,
) -> tuple[dict[int, Turn], list[SummaryRow]]:
    """The words half's candidates: the best `search.limit` (of the search's member, or everyone's) and each named
    member's own best `pool` (with no words, their messages in `window` instead; messages about them are searched
    beside it: `about_members`); and the summaries about the words, their days in the `summaries` zone
    (None: no summaries)."""
    turns: dict[int, Turn] = {}
    days: list[SummaryRow] = []
    named = [m for m in members if search.user_id in (None, m)]
    # What the plans of several searches ask, at once (a period is searched without them); a search for words
    # alone counts them on its own statement's trip (db.search.messages).
    if not search.bounded and members:
        await planner.count_ahead(session, list(search.terms), named)
    if search.terms:
        everyone, own = await message_store.search_with_members(session, search, named, pool)
        for rows in [everyone, *own.values()]:
            turns |= {row.message_id: row.turn() for row in rows}
        if summaries is not None:
            days = await summary_rows(
                session, search.guild_id, search.terms, [search.user_id, *named],
                since=search.since, until=search.until, now=search.now, tz=summaries,
            )  # fmt: skip
    else:  # nothing to search for but who and when: their messages in that time
        since, until = window or (search.since, search.until)
        if search.until is not None:  # a replayed moment: nothing after it, whatever the question's window
            until = min(until, search.until) if until is not None else search.until
        for member in members:
            for row in await message_store.recent_messages(
                session, search.guild_id, user_id=member, here=search.here, limit=pool, since=since, until=until
            ):
                turns.setdefault(row.message_id, row.turn())
    return turns, days


async def summary_rows(
    session: AsyncSession,
    guild_id: int,
    terms: Sequence[str],
    authors: list[int | None],
    *,
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    tz: ZoneInfo,
) -> list[SummaryRow]:
    """Everyone's (or the asker's) and each named member's best daily summaries about the words, each once; with
    `until`, only of days over by then (a day's summary tells its whole day, also what came after `until`)."""
    by_author = await summary_store.search_summaries(
        session,
        guild_id,
        terms,
        authors=list(dict.fromkeys(authors)),
        since=_day(since, tz, date.min),
        until=_day(until, tz, date.max),
        today=now.astimezone(tz).date(),
        half_life_days=0,
        limit=20,
    )
    return list({(s.user_id, s.day): s for found in by_author.values() for s in found}.values())


def about(member: int, names: set[str]) -> tuple[str, ...]:
    """The words of a message about a member: their names, or a mention (its id)."""
    return (*sorted(names), str(member))


async def about_members(
    sessions: async_sessionmaker[AsyncSession], search: Search, members: dict[int, set[str]], *, pool: int
) -> list[Turn]:
    """The best `pool` messages about each named member by words: their name, or a mention (its id)."""
    found: list[Turn] = []
    if not members:
        return found
    async with sessions() as session:
        if not search.bounded:  # what their plans ask, at once (as `by_words` does for its own)
            await planner.count_ahead(session, [w for m, names in members.items() for w in about(m, names)], [])
        for member, names in members.items():
            about_them = replace(search, terms=about(member, names), user_id=None, limit=pool)
            found += [row.turn() for row in await message_store.search_messages(session, about_them)]
    return found


def _day(moment: datetime | None, tz: ZoneInfo, default: date) -> date:
    return default if moment is None else moment.astimezone(tz).date()
