"""Full-text recall queries: FTS5 (bm25) on SQLite, tsvector (ts_rank) on PostgreSQL, one result shape.

The database chooses a bounded pool of candidates by its own relevance × temporal decay; the final ranking
happens in Python (bot/memory/recall.py), the same on both databases. What a reader may see is the read
scope of db/scope.py, composed into every query here.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import partial
from typing import Any

from cachetools import TTLCache
from sqlalchemy import BigInteger, BindParameter, Date, Float, Integer, String, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.scope import Scope
from db.types import UTCDateTime

# Objects the migrations create for search that the models deliberately do not describe.
SEARCH_TABLE_PREFIXES = ("chat_fts", "summary_fts")
SEARCH_COLUMN = "search"

FAR_PAST = datetime(1970, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class MessageRow:
    message_id: int
    channel_id: int
    user_id: int
    text: str
    at: datetime
    relevance: float
    score: float
    reply_to_id: int | None = None

    def turn(self) -> Turn:
        """The message as recall shows it."""
        return Turn(self.message_id, self.channel_id, self.user_id, self.text, self.at, self.reply_to_id)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    user_id: int
    day: date
    text: str
    relevance: float
    score: float


def decay_rate(half_life_days: float) -> float:
    """Per-day exponent rate: weight = exp(-rate × age_days) halves every `half_life_days` (0: no decay)."""
    return math.log(2) / half_life_days if half_life_days > 0 else 0.0


def fts5_match(guild_id: int | None, terms: list[str], user_id: int | None, *, every: bool = False) -> str:
    """An FTS5 query: the guild (and member) scope AND any (or every) term (terms are plain \\w+ words)."""
    return _match(_scopes(guild_id, user_id), _words(terms), every=every)


def _scopes(guild_id: int | None, user_id: int | None) -> list[str]:
    """The full-text tokens of a guild's and a member's messages (the scope column: "g<guild> u<user>")."""
    return ([f"scope:g{guild_id}"] if guild_id is not None else []) + (
        [f"scope:u{user_id}"] if user_id is not None else []
    )


def _words(terms: list[str]) -> list[str]:
    """The terms as FTS5 phrases in the message body column."""
    return [f'body:"{t}"' for t in terms]


def _match(scopes: list[str], words: list[str], *, every: bool = False) -> str:
    joined = (" AND " if every else " OR ").join(words)
    return " AND ".join([*scopes, f"({joined})"])


# Without a period filter, SQLite does not rank every match. Two costs grow with the database, and the plan
# keeps both bounded:
#   - ranking: bm25 reads each matching row's length, so ranking every match of a common word (a tenth of a
#     ten-million-message database) costs seconds;
#   - bm25's idf: it counts every row holding each word of the query, once per query, so a word (or a member's
#     scope token) found in a million rows costs ~100 ms even when two rows are ranked.
# So words and scope tokens found in more than COMMON rows (counted once, capped, cached for a while) leave
# the full-text query: such a word says little about which message is meant (the final ranking in Python
# still counts it), and a common member or guild scope is filtered by the join instead. With what is left:
#   - up to MANY matches: all of them are ranked (exact, and cheap at that size);
#   - more: the DEPTH best containing *every* word (a small intersection, and what coord² favours), the best
#     containing all but one word for longer questions, and the RECENT newest containing any word (message
#     IDs are snowflakes: the newest are the highest rowids, read without ranking anything).
#   - and the RECENT newest rows holding any of the common words, unranked, after the ranked ones (with only
#     common words, they are all there is: recency is the one signal left).
MANY, DEPTH, RECENT, COMMON = 3_000, 1000, 300, 50_000
CUT = 4  # with up to MANY matches, the best CUT × limit of them are read first (see _cut)
_CANDIDATE = (
    "SELECT * FROM (SELECT rowid AS id, {rel} AS rel, {cover} AS cover FROM chat_fts "
    "WHERE chat_fts MATCH :{name}{order})"
)
_BM25 = "-bm25(chat_fts, 0.0, 1.0)"
Plan = dict[str, tuple[str, str, float, str]]  # subquery -> (FTS5 match, ORDER BY … LIMIT …, share of words, rel)
_counts: TTLCache[tuple[str, str], int] = TTLCache(maxsize=20_000, ttl=600)


def _candidates(plan: Plan) -> str:
    """The union of candidate subqueries, each row once with the most words it is known to contain."""
    union = "\n    UNION ALL\n    ".join(
        _CANDIDATE.format(name=name, order=order, cover=cover, rel=rel) for name, (_, order, cover, rel) in plan.items()
    )
    return (
        f"(SELECT id, max(rel) AS rel, max(cover) AS cover FROM (\n    {union}\n) GROUP BY id) AS k "
        "CROSS JOIN chat_history AS c ON c.message_id = k.id"
    )


async def _count_all(session: AsyncSession, tokens: list[str]) -> None:
    """Count (up to COMMON + 1) the rows holding each word or scope token not counted lately, in one statement,
    into the cache (counts change slowly; they only choose the plan, never which rows may be read)."""
    url = str(session.bind.url)  # type: ignore[union-attr]
    missing = sorted({t for t in tokens if (url, t) not in _counts})
    if not missing:
        return
    columns = ", ".join(
        f"(SELECT count(*) FROM (SELECT rowid FROM chat_fts WHERE chat_fts MATCH :t{i} LIMIT :cap))"
        for i in range(len(missing))
    )
    params: dict[str, object] = {f"t{i}": token for i, token in enumerate(missing)} | {"cap": COMMON + 1}
    if (lean := await _sqlite_rows(session, f"SELECT {columns}", params)) is not None:  # SQLite is the only caller
        counts = lean[0]
    else:
        counts = (await session.execute(text(f"SELECT {columns}"), params)).one()
    for token, count in zip(missing, counts, strict=True):
        _counts[(url, token)] = int(count)


async def count_ahead(session: AsyncSession, words: list[str], members: list[int]) -> None:
    """Count, in one statement, what the SQLite plans of the searches about to run will ask about: these words
    and these members (nothing to do elsewhere, or for what was counted lately)."""
    if session.bind.dialect.name == "sqlite":  # type: ignore[union-attr]
        await _count_all(session, [s for m in members for s in _scopes(None, m)] + _words(words))


async def _count(session: AsyncSession, token: str) -> int:
    """How many rows hold this word or scope token, up to COMMON + 1 (cached: it changes slowly)."""
    key = (str(session.bind.url), token)  # type: ignore[union-attr]
    if (count := _counts.get(key)) is None:
        await _count_all(session, [token])
        count = _counts.get(key, COMMON + 1)  # expired at once (a full cache): treated as common
    return count


async def _matches(session: AsyncSession, terms: list[str]) -> int:
    """At most how many rows the words not common hold (their counts, taken by the plan just before)."""
    counts = [await _count(session, w) for w in _words(terms)]
    return sum(c for c in counts if c <= COMMON)


async def _shared_database(session: AsyncSession, guild_id: int) -> bool:
    """Whether another guild has messages here: two index lookups, cached for a while (the answer only narrows
    the full-text query; the join's guild filter is what keeps guilds apart)."""
    key = (str(session.bind.url), f"shared:{guild_id}")  # type: ignore[union-attr]
    if (shared := _counts.get(key)) is None:
        other = text(
            "SELECT EXISTS (SELECT 1 FROM chat_history WHERE guild_id > :g) "
            "OR EXISTS (SELECT 1 FROM chat_history WHERE guild_id < :g)"
        ).bindparams(bindparam("g", type_=BigInteger()))
        shared = _counts[key] = int(bool(await session.scalar(other, {"g": guild_id})))
    return bool(shared)


async def _tokens(
    session: AsyncSession, guild_id: int, terms: list[str], user_id: int | None
) -> tuple[list[str], list[str], str]:
    """A search's scope tokens and words, and the database they are counted for (the key of `_counts`)."""
    scopes = _scopes(guild_id if await _shared_database(session, guild_id) else None, user_id)
    return scopes, _words(terms), str(session.bind.url)  # type: ignore[union-attr]


async def _sqlite_plan(session: AsyncSession, guild_id: int, terms: list[str], user_id: int | None) -> Plan:
    """Which candidates to rank (see above); `cover` lets the pool prefer the complete matches, like coord²."""
    scopes, words, url = await _tokens(session, guild_id, terms, user_id)
    await _count_all(session, scopes + words)
    return _plan(scopes, words, lambda token: _counts.get((url, token), COMMON + 1))  # expired at once: common


def _plan(scopes: list[str], words: list[str], count: Callable[[str], int]) -> Plan:
    """`_sqlite_plan` with the counts of its tokens given."""
    scopes = [s for s in scopes if count(s) <= COMMON]
    rare = [w for w in words if count(w) <= COMMON]
    if not rare:
        return {"m_common": (_match(scopes, words), f" ORDER BY rowid DESC LIMIT {RECENT}", 1 / len(words), "1.0")}
    n = len(rare)
    newest = f" ORDER BY rowid DESC LIMIT {RECENT}"
    # The newest rows holding only common words come unranked (rel 0: after every ranked one, newest first).
    plan: Plan = {"m_common": (_match(scopes, words), newest, 1 / len(words), "0.0")} if n < len(words) else {}
    # Each word's count is known (cached) and their sum bounds the matches: no statement to count them again.
    if sum(count(w) for w in rare) <= MANY:  # a LIMIT keeps bm25 from flattening
        return plan | {"m_any": (_match(scopes, rare), " LIMIT -1", 1.0, _BM25)}
    rank = " ORDER BY bm25(chat_fts, 0.0, 1.0) LIMIT {}"
    plan["m_recent"] = (_match(scopes, rare), newest, 1 / n, _BM25)
    if n > 1:
        plan["m_all"] = (_match(scopes, rare, every=True), rank.format(DEPTH), 1.0, _BM25)
    if n > 2:  # all but one word, for questions of three words or more
        for i in range(n):
            plan[f"m_but{i}"] = (
                _match(scopes, rare[:i] + rare[i + 1 :], every=True),
                rank.format(DEPTH // n),
                (n - 1) / n,
                _BM25,
            )
    return plan


async def search_messages(
    session: AsyncSession,
    guild_id: int,
    terms: list[str],
    *,
    user_id: int | None,
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    half_life_days: float,
    here: int | None,
    limit: int,
) -> list[MessageRow]:
    """The best `limit` messages by relevance × decay (`since` / `until`: None for no bound)."""
    args = (session, guild_id, terms, user_id, since, until, now, half_life_days, here, limit)
    if session.bind.dialect.name == "sqlite" and since is None and until is None:  # type: ignore[union-attr]
        guessed = await _guessed(session, args)
        plan = await _sqlite_plan(session, guild_id, terms, user_id)
        if (cut := _cut(plan, limit, user_id, half_life_days)) is not None:
            if guessed is not None and guessed[0] == cut:
                rows = guessed[1]  # run already, beside the counting
                # Short of `limit`, its rows are still the plan's when the words hold no more rows than it read:
                # known for sure only from counts all taken on that trip (a count can be ten minutes old).
                if len(rows) < limit and guessed[2] and await _matches(session, terms) <= CUT * limit:
                    return rows
            # With no more matches than the cut reads, it would read them all, and a short answer would be read
            # again.
            elif await _matches(session, terms) > CUT * limit:
                rows = await _search_messages(*args, plan=cut)
            else:
                rows = []
            if len(rows) >= limit:
                return rows
        return await _search_messages(*args, plan=plan)
    return await _search_messages(*args, plan=None)


SearchArgs = tuple[
    AsyncSession, int, list[str], int | None, datetime | None, datetime | None, datetime, float, int | None, int
]


async def _guessed(session: AsyncSession, args: SearchArgs) -> tuple[Plan, list[MessageRow], bool] | None:
    """With words or scopes not counted lately: their counts and the search their plan most likely is, sent to
    SQLite's thread together — one trip instead of two, each ~2.5 ms of a reply on a busy event loop for
    0.1–2 ms of SQLite's work (bench.reply). The uncounted are guessed rare (a common word is counted when first
    asked about, and stays counted a while); the search sent is that plan's cut, whose rows are the plan's
    whenever it gives `limit` of them. The cut sent, its rows and whether every word was counted on this trip;
    None when nothing was uncounted or no cut applies. The caller uses the rows only if the counts chose the
    same cut."""
    _, guild_id, terms, user_id, _, _, _, half_life_days, _, limit = args
    scopes, words, url = await _tokens(session, guild_id, terms, user_id)
    missing = sorted({t for t in scopes + words if (url, t) not in _counts})
    if not missing:
        return None
    guess = _plan(scopes, words, lambda token: _counts.get((url, token), 0))
    if (cut := _cut(guess, limit, user_id, half_life_days)) is None:
        return None
    # Both go to the session's one connection: its thread runs them one after the other, with no trip between.
    await session.connection()  # begun before, so neither provisions it while the other waits
    counting = asyncio.ensure_future(_count_all(session, missing))
    searching = asyncio.ensure_future(_search_messages(*args, plan=cut))
    counted, rows = await asyncio.gather(counting, searching, return_exceptions=True)
    for outcome in (counted, rows):
        if isinstance(outcome, BaseException):
            raise outcome
    return cut, rows, set(words) <= set(missing)  # type: ignore[return-value]


async def search_with_members(
    session: AsyncSession,
    guild_id: int,
    terms: list[str],
    members: list[int],
    *,
    user_id: int | None,
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    here: int | None,
    limit: int,
    member_limit: int,
) -> tuple[list[MessageRow], dict[int, list[MessageRow]]]:
    """The best `limit` messages for the words (of `user_id`, or everyone's) and each member's own best
    `member_limit` (no decay): `search_messages` for each, with one statement where they would rank the same
    matches. That is on SQLite, without a period, for everyone's search and a member whose scope left the
    full-text query (more than COMMON messages): their search was everyone's again, filtered by the join
    (~20 ms for 2,500 matches at 1 M)."""
    search = partial(
        search_messages, session, guild_id, terms, since=since, until=until, now=now, half_life_days=0, here=here
    )
    shared: list[int] = []
    sqlite = session.bind.dialect.name == "sqlite"  # type: ignore[union-attr]
    if sqlite and members and user_id is None and since is None and until is None:
        await count_ahead(session, terms, members)
        plan = await _sqlite_plan(session, guild_id, terms, None)
        shared = [m for m in members if await _sqlite_plan(session, guild_id, terms, m) == plan]
    own: dict[int, list[MessageRow]] = {}
    if shared:
        rows = await _search_messages(
            session, guild_id, terms, None, None, None, now, 0, here, limit,
            plan=plan, members=shared, member_limit=member_limit,
        )  # fmt: skip
        # In score order, everyone's best `limit` come first, and each member's own best are their first rows.
        everyone = rows[:limit]
        own = {m: [r for r in rows if r.user_id == m][:member_limit] for m in shared}
    else:
        everyone = await search(user_id=user_id, limit=limit)
    for member in members:
        if member not in own:
            own[member] = await search(user_id=member, limit=member_limit)
    return everyone, own


def _cut(plan: Plan, limit: int, user_id: int | None, half_life_days: float) -> Plan | None:
    """The plan reading only the CUT × `limit` best matches, where that gives the same rows whenever it gives
    `limit` of them (else the whole plan runs): every match is ranked by bm25 alone (no decay, no other
    subquery), ties broken as the final order breaks them, and the read scope can only drop rows (a member
    filter not in the full-text query could drop most of them). Ranking every match is cheap; reading the
    row of each from chat_history was most of a search (9 of 15 ms for 2,550 matches at 1 M messages)."""
    if set(plan) != {"m_any"} or half_life_days > 0:
        return None
    match, _, cover, rel = plan["m_any"]
    if user_id is not None and _scopes(None, user_id)[0] not in match:
        return None
    return {"m_any": (match, f" ORDER BY bm25(chat_fts, 0.0, 1.0), rowid DESC LIMIT {CUT * limit}", cover, rel)}


async def _search_messages(  # noqa: PLR0917 - one call site, the public function above
    session: AsyncSession,
    guild_id: int,
    terms: list[str],
    user_id: int | None,
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    half_life_days: float,
    here: int | None,
    limit: int,
    *,
    plan: Plan | None,
    members: list[int] | None = None,
    member_limit: int = 0,
) -> list[MessageRow]:
    sqlite = session.bind.dialect.name == "sqlite"  # type: ignore[union-attr]
    if plan is not None:
        source = _candidates(plan)
        relevance = "k.rel * k.cover * k.cover"
        match = "c.user_id = :user_id" if user_id is not None else "1 = 1"  # a common scope left the FTS query
        age = "max(0.0, julianday(:now) - julianday(c.timestamp))"
    elif sqlite:
        # CROSS JOIN fixes the order: full-text matches first, then their rows (else SQLite may walk the
        # guild's index and run the full-text query once per row).
        source = "chat_fts CROSS JOIN chat_history AS c ON c.message_id = chat_fts.rowid"
        relevance = "-bm25(chat_fts, 0.0, 1.0)"
        match = "chat_fts MATCH :match"
        age = "max(0.0, julianday(:now) - julianday(c.timestamp))"
    else:
        source = "chat_history AS c, websearch_to_tsquery('english', :words) AS q(query)"
        relevance = "ts_rank(c.search, q.query, 1)"
        match = "c.search @@ q.query" + (" AND c.user_id = :user_id" if user_id is not None else "")
        age = "greatest(0.0, extract(epoch FROM (:now - c.timestamp)) / 86400.0)"
    score = f"{relevance} * exp(-:rate * {age})"
    columns = f"""c.message_id, c.channel_id, c.user_id, c.message_text, c.timestamp,
               {relevance} AS relevance, {score} AS score, c.reply_to_id"""
    where = f"""{match} AND {scoping.where(scoping.MESSAGES, "c")}
          AND c.timestamp >= :since AND c.timestamp < :until"""
    sql = f"""
        SELECT {columns}
        FROM {source}
        WHERE {where}
        ORDER BY score DESC, c.message_id DESC
        LIMIT :limit
    """
    if members:  # everyone's best `limit` and each member's own best `member_limit`, from one ranking
        order = f"{score} DESC, c.message_id DESC"
        sql = f"""
        SELECT message_id, channel_id, user_id, message_text, timestamp, relevance, score, reply_to_id FROM (
            SELECT {columns},
                   row_number() OVER (ORDER BY {order}) AS r_all,
                   row_number() OVER (PARTITION BY c.user_id ORDER BY {order}) AS r_own
            FROM {source}
            WHERE {where}
        ) WHERE r_all <= :limit OR (user_id IN :members AND r_own <= :member_limit)
        ORDER BY score DESC, message_id DESC
        """
    query = (
        text(sql)
        .bindparams(
            bindparam("since", type_=UTCDateTime()),
            bindparam("until", type_=UTCDateTime()),
            bindparam("now", type_=UTCDateTime()),
            bindparam("rate", type_=Float()),
            bindparam("limit", type_=Integer()),
        )
        .columns(timestamp=UTCDateTime())
    )
    query = scoping.typed(query, scoping.MESSAGES)
    params: dict[str, object] = {
        **scoping.params(Scope(guild_id, here), scoping.MESSAGES),
        "since": since or FAR_PAST,
        "until": until or FAR_FUTURE,
        "now": now,
        "rate": decay_rate(half_life_days),
        "limit": limit,
    }
    if members:
        params |= {"members": members, "member_limit": member_limit}
        query = query.bindparams(_id_list("members"), bindparam("member_limit", type_=Integer()))
    if plan is not None:
        for name, (match_text, *_) in plan.items():
            params[name] = match_text
            query = query.bindparams(bindparam(name, type_=String()))
        if user_id is not None:
            params["user_id"] = user_id
            query = query.bindparams(bindparam("user_id", type_=BigInteger()))
    elif sqlite:
        params["match"] = fts5_match(guild_id, terms, user_id)
        query = query.bindparams(bindparam("match", type_=String()))
    else:
        params["words"] = " or ".join(terms)
        query = query.bindparams(bindparam("words", type_=String()))
        if user_id is not None:
            params["user_id"] = user_id
            query = query.bindparams(bindparam("user_id", type_=BigInteger()))
    if (lean := await _sqlite_rows(session, sql, params)) is not None:
        return [MessageRow(m, c, u, body, _utc(ts), float(r), float(s), rt) for m, c, u, body, ts, r, s, rt in lean]
    rows = await session.execute(query, params)
    return [MessageRow(m, c, u, body, ts, float(r), float(s), rt) for m, c, u, body, ts, r, s, rt in rows]


async def search_summaries(
    session: AsyncSession,
    guild_id: int,
    terms: list[str],
    *,
    authors: list[int | None],
    since: date,
    until: date,
    today: date,
    half_life_days: float,
    limit: int,
) -> dict[int | None, list[SummaryRow]]:
    """Each author's best `limit` daily summaries by relevance × decay (None: anyone's; age counted in whole
    days), all in one statement."""
    sqlite = session.bind.dialect.name == "sqlite"  # type: ignore[union-attr]
    if sqlite:
        source = "summary_fts CROSS JOIN daily_summaries AS s ON s.id = summary_fts.rowid"
        relevance = "-bm25(summary_fts, 0.0, 1.0)"
        age = "max(0.0, julianday(:today) - julianday(s.day))"
    else:
        source = "daily_summaries AS s, websearch_to_tsquery('english', :words) AS q(query)"
        relevance = "ts_rank(s.search, q.query, 1)"
        age = "greatest(0, :today - s.day)"
    params: dict[str, object] = {
        **scoping.params(Scope(guild_id), scoping.DERIVED),
        "since": since,
        "until": until,
        "today": today,
        "rate": decay_rate(half_life_days),
        "limit": limit,
    }
    binds: list[BindParameter[Any]] = [bindparam(k, type_=Date()) for k in ("since", "until", "today")]
    binds += [bindparam("rate", type_=Float()), bindparam("limit", type_=Integer())]
    if not sqlite:
        params["words"] = " or ".join(terms)
        binds.append(bindparam("words", type_=String()))
    selects = []
    for i, author in enumerate(authors):
        if sqlite:
            params[f"match{i}"] = fts5_match(guild_id, terms, author)
            binds.append(bindparam(f"match{i}", type_=String()))
            match = f"summary_fts MATCH :match{i}"
        else:
            match = "s.search @@ q.query"
            if author is not None:
                params[f"user{i}"] = author
                binds.append(bindparam(f"user{i}", type_=BigInteger()))
                match += f" AND s.user_id = :user{i}"
        selects.append(f"""SELECT * FROM (
            SELECT {i} AS author, s.user_id, s.day, s.summary, {relevance} AS relevance,
                   {relevance} * exp(-:rate * {age}) AS score
            FROM {source}
            WHERE {match} AND {scoping.where(scoping.DERIVED, "s")}
              AND s.day >= :since AND s.day < :until AND s.summary != ''
            ORDER BY score DESC, s.day DESC, s.user_id
            LIMIT :limit
        ) AS a{i}""")
    query = scoping.typed(text("\nUNION ALL\n".join(selects)).bindparams(*binds).columns(day=Date()), scoping.DERIVED)
    found: dict[int | None, list[SummaryRow]] = {author: [] for author in authors}
    for i, u, d, body, r, score in await session.execute(query, params):
        day = d if isinstance(d, date) else date.fromisoformat(str(d))
        found[authors[i]].append(SummaryRow(u, day, body, float(r), float(score)))
    for rows in found.values():  # UNION ALL keeps no order: each author's, as ranked
        rows.sort(key=lambda r: (-r.score, -r.day.toordinal(), r.user_id))
    return found


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


_COLUMNS = "c.message_id, c.channel_id, c.user_id, c.message_text, c.timestamp, c.reply_to_id"


@dataclass(frozen=True, slots=True)
class Turn:
    """A message as recall shows it, with what it replies to."""

    message_id: int
    channel_id: int
    user_id: int
    text: str
    at: datetime
    reply_to_id: int | None


def _turns(rows: object) -> list[Turn]:
    return [Turn(m, c, u, body, ts, r) for m, c, u, body, ts, r in rows]  # type: ignore[attr-defined]


async def _sqlite_turns(session: AsyncSession, sql: str, params: Mapping[str, object]) -> list[Turn] | None:
    """Turns read straight through SQLite's driver (None: not SQLite); see `_sqlite_rows`."""
    rows = await _sqlite_rows(session, sql, params)
    return None if rows is None else [Turn(m, c, u, body, _utc(at), r) for m, c, u, body, at, r in rows]


async def _sqlite_rows(session: AsyncSession, sql: str, params: Mapping[str, object]) -> list[Any] | None:
    """Rows read straight through SQLite's driver on the session's own connection (None: not SQLite).

    Recall reads hundreds of rows per question; through SQLAlchemy each IN parameter and each row is handled
    in Python (200 messages by id: 4.4 ms, where the driver takes 0.5 ms). `sql` is the session path's own
    text: a list parameter (`IN :ids`, expanding there) becomes one placeholder per item here too; bound as one
    JSON array instead, SQLite's planner could no longer see the values and scanned the table. Datetimes are
    bound as UTCDateTime stores them.
    """
    connection = await session.connection()
    if connection.dialect.name != "sqlite":
        return None
    lists = {k: v for k, v in params.items() if isinstance(v, list)}
    values = {k: _stored(v) for k, v in params.items() if k not in lists}
    for name, items in lists.items():
        values |= {f"{name}_{i}": item for i, item in enumerate(items)}
        listed = "(" + (", ".join(f":{name}_{i}" for i in range(len(items))) or "NULL") + ")"
        sql = re.sub(rf":{name}\b", listed, sql)
    driver = (await connection.get_raw_connection()).driver_connection
    return list(await driver.execute_fetchall(sql, values))  # type: ignore[union-attr]


def _stored(value: object) -> object:
    """A parameter as SQLite compares it with a UTCDateTime column (naive UTC, microseconds)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")
    return value


def _utc(stored: str) -> datetime:
    """A timestamp as SQLite stores UTCDateTime ('2026-11-20 18:00:00.000000', UTC without an offset)."""
    return datetime.fromisoformat(stored).replace(tzinfo=UTC)


def _id_list(name: str) -> BindParameter[int]:
    """An IN list bound at execution: one cached compilation whatever the number of ids (each list rendered as
    its own placeholders compiled afresh, 60 ms a question with hundreds of ids)."""
    return bindparam(name, expanding=True, type_=BigInteger())


async def messages_by_id(session: AsyncSession, guild_id: int, ids: list[int], *, here: int | None) -> list[Turn]:
    """Those of the given messages a reader in `here` may see (the read scope decides, not the caller)."""
    if not ids:
        return []
    where = scoping.where(scoping.MESSAGES, "c")
    sql = f"SELECT {_COLUMNS} FROM chat_history AS c WHERE c.message_id IN :ids AND {where}"
    params = {"ids": ids, **scoping.params(Scope(guild_id, here), scoping.MESSAGES)}
    if (turns := await _sqlite_turns(session, sql, params)) is not None:
        return turns
    query = scoping.typed(text(sql).columns(timestamp=UTCDateTime()), scoping.MESSAGES).bindparams(_id_list("ids"))
    return _turns(await session.execute(query, params))


async def around(
    session: AsyncSession, guild_id: int, hits: list[Turn], *, here: int | None, neighbours: int
) -> list[Turn]:
    """The turns around hits, in one statement: the message before and after each of the first `neighbours`
    hits in its channel, what each hit replies to, and the replies to it (all within the read scope)."""
    if not hits:
        return []
    values: dict[str, int] = {}
    sides = []
    for i, hit in enumerate(hits[:neighbours]):
        values |= {f"c{i}": hit.channel_id, f"n{i}": hit.message_id}
        sides.append(
            f"SELECT (SELECT max(x.message_id) FROM chat_history AS x WHERE x.channel_id = :c{i} "
            f"AND x.message_id < :n{i})"
        )
        sides.append(
            f"SELECT (SELECT min(x.message_id) FROM chat_history AS x WHERE x.channel_id = :c{i} "
            f"AND x.message_id > :n{i})"
        )
    parents = [h.reply_to_id for h in hits if h.reply_to_id is not None]
    # The ids first, each source on its own index, then their rows: one WHERE with the sources OR-ed together
    # made SQLite's planner scan the guild's messages (7–14 ms at 100,000 messages, for a single hit).
    replies = "SELECT x.message_id FROM chat_history AS x WHERE x.reply_to_id IN :hits AND x.reply_to_id IS NOT NULL"
    ids = [*sides, replies]
    if parents:
        ids.append("SELECT x.message_id FROM chat_history AS x WHERE x.message_id IN :parents")
    sql = f"""
        SELECT {_COLUMNS} FROM chat_history AS c
        WHERE c.message_id IN ({" UNION ALL ".join(ids)})
          AND {scoping.where(scoping.MESSAGES, "c")}
    """
    params = {
        **values,
        "hits": [h.message_id for h in hits],
        **({"parents": parents} if parents else {}),
        **scoping.params(Scope(guild_id, here), scoping.MESSAGES),
    }
    if (turns := await _sqlite_turns(session, sql, params)) is not None:
        return turns
    query = scoping.typed(text(sql).columns(timestamp=UTCDateTime()), scoping.MESSAGES).bindparams(
        *(bindparam(k, type_=BigInteger()) for k in values),
        _id_list("hits"),
        *([_id_list("parents")] if parents else []),
    )
    return _turns(await session.execute(query, params))
