"""The message search that ties full-text, plan and read scope together, and a member's newest messages."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, BindParameter, Float, Integer, String, TextClause, bindparam, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.models import ChatMessage
from db.scope import Scope
from db.search import driver, fts, planner, postgres
from db.search.planner import Plan
from db.search.types import FAR_FUTURE, FAR_PAST, MessageRow, Search, decay_rate
from db.types import UTCDateTime

Guessed = tuple[Plan, list[MessageRow], bool]  # the cut sent, its rows, whether every word was counted with it


async def search_messages(session: AsyncSession, search: Search) -> list[MessageRow]:
    """The best `limit` messages by relevance × decay."""
    if not driver.is_sqlite(session):
        return await _search_messages(session, search, plan=None, ranked=await postgres.candidates(session, search))
    if search.bounded:
        return await _search_messages(session, search, plan=None)
    guessed = await _guessed(session, search)
    plan = await planner.sqlite_plan(session, search.guild_id, search.terms, search.user_id)
    if (cut := planner.cut(plan, search)) is not None:
        rows = await _cut_rows(session, search, cut, guessed)
        if rows is not None:
            return rows
    return await _search_messages(session, search, plan=plan)


async def _cut_rows(
    session: AsyncSession, search: Search, cut: Plan, guessed: Guessed | None
) -> list[MessageRow] | None:
    """The cut's rows where they are surely the whole plan's (None: the whole plan must run)."""
    if guessed is not None and guessed[0] == cut:
        rows = guessed[1]  # run already, beside the counting
        # Short of `limit`, its rows are still the plan's when the words hold no more rows than it read: known
        # for sure only from counts all taken on that trip (a count can be ten minutes old).
        if len(rows) < search.limit and guessed[2] and not await planner.more_than_cut(session, search):
            return rows
    # With no more matches than the cut reads, it would read them all, and a short answer would be read again.
    elif await planner.more_than_cut(session, search):
        rows = await _search_messages(session, search, plan=cut)
    else:
        rows = []
    return rows if len(rows) >= search.limit else None


async def _guessed(session: AsyncSession, search: Search) -> Guessed | None:
    """With words or scopes not counted lately: their counts and the search their plan most likely is, sent to
    SQLite's thread together — one trip instead of two, each ~2.5 ms of a reply on a busy event loop for
    0.1–2 ms of SQLite's work (bench.reply). The search sent is that plan's cut, whose rows are the plan's
    whenever it gives `limit` of them. None when nothing was uncounted or no cut applies; the caller uses the
    rows only if the counts chose the same cut."""
    if (guess := await planner.guess(session, search)) is None:
        return None
    missing, cut, every_word = guess
    # Both go to the session's one connection: its thread runs them one after the other, with no trip between.
    await session.connection()  # begun before, so neither provisions it while the other waits
    counting = asyncio.ensure_future(planner.count_all(session, missing))
    searching = asyncio.ensure_future(_search_messages(session, search, plan=cut))
    counted, rows = await asyncio.gather(counting, searching, return_exceptions=True)
    for outcome in (counted, rows):
        if isinstance(outcome, BaseException):
            raise outcome
    return cut, rows, every_word  # type: ignore[return-value]


async def search_with_members(
    session: AsyncSession, search: Search, members: list[int], member_limit: int
) -> tuple[list[MessageRow], dict[int, list[MessageRow]]]:
    """The search's best `limit` messages and each member's own best `member_limit`: `search_messages` for each,
    with one statement where they would rank the same matches. That is on SQLite, without a period, for
    everyone's search and a member whose scope left the full-text query (more than COMMON messages): their
    search was everyone's again, filtered by the join (~20 ms for 2,500 matches at 1 M)."""
    shared: list[int] = []
    if driver.is_sqlite(session) and members and search.user_id is None and not search.bounded:
        await planner.count_ahead(session, search.terms, members)
        plan = await planner.sqlite_plan(session, search.guild_id, search.terms, None)
        shared = [m for m in members if await planner.sqlite_plan(session, search.guild_id, search.terms, m) == plan]
    own: dict[int, list[MessageRow]] = {}
    if shared:
        rows = await _search_messages(session, search, plan=plan, members=shared, member_limit=member_limit)
        # In score order, everyone's best `limit` come first, and each member's own best are their first rows.
        everyone = rows[: search.limit]
        own = {m: [r for r in rows if r.user_id == m][:member_limit] for m in shared}
    else:
        everyone = await search_messages(session, search)
    for member in members:
        if member not in own:
            own[member] = await search_messages(session, replace(search, user_id=member, limit=member_limit))
    return everyone, own


async def _search_messages(
    session: AsyncSession,
    search: Search,
    *,
    plan: Plan | None,
    members: list[int] | None = None,
    member_limit: int = 0,
    ranked: fts.Ranked | None = None,
) -> list[MessageRow]:
    """The plan's candidates (None: every full-text match, or `ranked`'s) ranked by relevance × decay, the best
    `limit`; with `members`, each member's own best `member_limit` too, from the same ranking."""
    if plan is not None:
        ranked = planner.ranked(plan, search.user_id)
    elif ranked is None:
        ranked = fts.matching_messages(search, sqlite=driver.is_sqlite(session))
    sql = _ranked_sql(ranked, members=bool(members))
    params: dict[str, object] = {
        **scoping.params(search.scope(), scoping.MESSAGES),
        "since": search.since or FAR_PAST,
        "until": search.until or FAR_FUTURE,
        "now": search.now,
        "rate": decay_rate(search.half_life_days),
        "limit": search.limit,
        **ranked.params,
    }
    binds: list[BindParameter[Any]] = [
        *(bindparam(name, type_=UTCDateTime()) for name in ("since", "until", "now")),
        bindparam("rate", type_=Float()),
        bindparam("limit", type_=Integer()),
        *ranked.binds,
    ]
    if members:
        params |= {"members": members, "member_limit": member_limit}
        binds += [driver.id_list("members"), bindparam("member_limit", type_=Integer())]
    if (lean := await driver.sqlite_rows(session, sql, params)) is not None:
        return [MessageRow(m, c, u, b, driver.utc(ts), float(r), float(s), rt) for m, c, u, b, ts, r, s, rt in lean]
    query = scoping.typed(text(sql).bindparams(*binds).columns(timestamp=UTCDateTime()), scoping.MESSAGES)
    rows = await session.execute(query, params)
    return [MessageRow(m, c, u, b, ts, float(r), float(s), rt) for m, c, u, b, ts, r, s, rt in rows]


def _ranked_sql(ranked: fts.Ranked, *, members: bool) -> str:
    """The statement of a ranked read: the best `:limit`, and with `members` also each member's own best
    `:member_limit` (from one ranking)."""
    score = f"{ranked.relevance} * exp(-:rate * {ranked.age})"
    columns = f"""c.message_id, c.channel_id, c.user_id, c.message_text, c.timestamp,
               {ranked.relevance} AS relevance, {score} AS score, c.reply_to_id"""
    where = f"""{ranked.match} AND {scoping.where(scoping.MESSAGES, "c")}
          AND c.timestamp >= :since AND c.timestamp < :until"""
    if not members:
        return f"""
        SELECT {columns}
        FROM {ranked.source}
        WHERE {where}
        ORDER BY score DESC, c.message_id DESC
        LIMIT :limit
    """
    order = f"{score} DESC, c.message_id DESC"
    return f"""
        SELECT message_id, channel_id, user_id, message_text, timestamp, relevance, score, reply_to_id FROM (
            SELECT {columns},
                   row_number() OVER (ORDER BY {order}) AS r_all,
                   row_number() OVER (PARTITION BY c.user_id ORDER BY {order}) AS r_own
            FROM {ranked.source}
            WHERE {where}
        ) WHERE r_all <= :limit OR (user_id IN :members AND r_own <= :member_limit)
        ORDER BY score DESC, message_id DESC
        """


async def recent_messages(
    session: AsyncSession,
    guild_id: int,
    *,
    user_id: int | None,
    here: int | None,
    limit: int,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[MessageRow]:
    """The guild's (or a member's) newest visible messages, within [since, until) if given."""
    user = " AND c.user_id = :user_id" if user_id is not None else ""
    query = (
        text(f"""
        SELECT c.message_id, c.channel_id, c.user_id, c.message_text, c.timestamp, c.reply_to_id
        FROM chat_history AS c
        WHERE {scoping.where(scoping.MESSAGES, "c")}{user} AND c.timestamp >= :since AND c.timestamp < :until
        ORDER BY c.timestamp DESC LIMIT :limit
    """)
        .bindparams(
            bindparam("limit", type_=Integer()),
            bindparam("since", type_=UTCDateTime()),
            bindparam("until", type_=UTCDateTime()),
        )
        .columns(timestamp=UTCDateTime())
    )
    query = scoping.typed(query, scoping.MESSAGES)
    params: dict[str, object] = {
        **scoping.params(Scope(guild_id, here), scoping.MESSAGES),
        "limit": limit,
        "since": since or FAR_PAST,
        "until": until or FAR_FUTURE,
    }
    if user_id is not None:
        query = query.bindparams(bindparam("user_id", type_=BigInteger()))
        params["user_id"] = user_id
    rows = await session.execute(query, params)
    return [MessageRow(m, c, u, body, ts, 0.0, 0.0, r) for m, c, u, body, ts, r in rows]


async def span(session: AsyncSession, guild_id: int, *, before: datetime) -> tuple[datetime, datetime] | None:
    """When the guild's oldest stored message and its newest before `before` were written (None: nothing yet).

    Two subqueries, each one end of the (guild_id, timestamp) index: min and max in one SELECT would read the
    whole range on SQLite."""
    oldest = select(func.min(ChatMessage.timestamp)).where(ChatMessage.guild_id == guild_id).scalar_subquery()
    newest = (
        select(func.max(ChatMessage.timestamp))
        .where(ChatMessage.guild_id == guild_id, ChatMessage.timestamp < before)
        .scalar_subquery()
    )
    first, last = (await session.execute(select(oldest, newest))).one()
    return None if first is None or last is None else (first, last)


def _newest(sql: str, words: str) -> TextClause:
    """A newest-matches query with its parameters typed: the words (`words`: FTS5's match or PostgreSQL's words), the
    limit, the period and the read scope."""
    typed = text(sql).bindparams(
        bindparam(words, type_=String()),
        bindparam("limit", type_=Integer()),
        bindparam("since", type_=UTCDateTime()),
        bindparam("until", type_=UTCDateTime()),
    )
    return scoping.typed(typed, scoping.MESSAGES)


# The newest matches the reader may see: FTS5 gives its matches newest first, each is one lookup by key, and the
# scan stops at the limit (a private channel's mentions do not take the places of shared ones).
_NEWEST_FTS5 = _newest(
    f"""
    SELECT chat_fts.rowid FROM chat_fts CROSS JOIN chat_history AS c ON c.message_id = chat_fts.rowid
    WHERE chat_fts MATCH :match AND c.timestamp >= :since AND c.timestamp < :until
      AND {scoping.where(scoping.MESSAGES, "c")}
    ORDER BY chat_fts.rowid DESC LIMIT :limit
""",
    "match",
)
# The GIN index finds the matches; the period and the read scope filter them (OFFSET 0: see fts.POSTGRES_MATCHES).
_NEWEST_POSTGRES = _newest(
    f"""
    SELECT m.message_id FROM (
        SELECT c.message_id, c.guild_id, c.channel_id, c.user_id, c.kind, c.timestamp
        FROM chat_history AS c, websearch_to_tsquery('english', :words) AS q(query)
        WHERE c.search @@ q.query OFFSET 0
    ) AS m
    WHERE m.timestamp >= :since AND m.timestamp < :until AND {scoping.where(scoping.MESSAGES, "m")}
    ORDER BY m.message_id DESC LIMIT :limit
""",
    "words",
)


async def newest_matching(
    session: AsyncSession,
    guild_id: int,
    terms: list[str],
    *,
    here: int | None,
    limit: int,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[int]:
    """The ids of the newest `limit` messages holding any of `terms` that a reader in `here` may see, written within
    [since, until) if given (no rows read: their ids choose among vectors, and what is chosen is read back through
    the read scope)."""
    values: dict[str, object] = {
        "since": since or FAR_PAST,
        "until": until or FAR_FUTURE,
        "limit": limit,
        **scoping.params(Scope(guild_id, here), scoping.MESSAGES),
    }
    if driver.is_sqlite(session):
        values["match"] = fts.fts5_match(guild_id, terms, None)
        return list((await session.execute(_NEWEST_FTS5, values)).scalars())
    values["words"] = fts.tsquery_words(terms)
    return list((await session.execute(_NEWEST_POSTGRES, values)).scalars())
