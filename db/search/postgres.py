"""Which candidates PostgreSQL ranks for a message search: SQLite's plan (db.search.planner) in tsquery terms.

Ranking every match costs a heap visit and a ts_rank for each (45,000 matches of two common words at 1,000,000
messages: ~150 ms on two busy cores, where the GIN index finds them in a few). The matches are counted by the
planner's own estimate (EXPLAIN: ANALYZE's most common lexemes, within a few per cent here), and:
  - up to MANY (10,000, where SQLite's plan stops at 3,000): all of them are ranked, exact. The bounded plan below
    costs more than ranking every match until well past SQLite's limit: on bench.soak's guild at month 12 (173,000
    messages, a named member's messages and mentions in the thousands), the words half took 60 ms a question and
    the search about the named member 29–35 with 3,000 (at 1,000: 125 and 86), 35–40 and 19–20 with 10,000, the
    same questions found;
  - more: the DEPTH best holding every word and, for three words or more, the DEPTH best holding all but one
    (both small intersections, which the GIN index finds without visiting the other matches), and the RECENT
    newest holding any word; ranked by ts_rank × coverage², like SQLite's plan.
A period is searched whole, as on SQLite. Each subquery finds its rows through the GIN index alone: asyncpg
prepares every statement and PostgreSQL may plan it once for any parameters (see fts.POSTGRES_MATCHES).
"""

from __future__ import annotations

from itertools import combinations

from cachetools import TTLCache
from sqlalchemy import String, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from db.search.fts import POSTGRES_AGE, Ranked, member_param, tsquery_words
from db.search.planner import DEPTH, RECENT
from db.search.types import Search

MANY = 10_000
_ESTIMATE = text(
    "EXPLAIN (FORMAT JSON) SELECT 1 FROM chat_history WHERE search @@ websearch_to_tsquery('english', :words)"
).bindparams(bindparam("words", type_=String()))
_ROWS = text("SELECT reltuples FROM pg_class WHERE oid = 'chat_history'::regclass")
_SUBQUERY = """(
        SELECT c.message_id AS id, {cover} AS cover FROM chat_history AS c,
               websearch_to_tsquery('english', :{name}) AS q(query)
        WHERE {match} AND c.guild_id = :scope_guild{member}
        ORDER BY {order} LIMIT {limit}
    )"""
# The newest matches, found one of two ways, whichever reads fewer rows: through the GIN index, every match
# sorted (message_id + 0: not in the primary key's order, which the planner would walk instead), or the guild's
# (and member's) newest messages walked back in time until RECENT hold a word (ts_match_vq: the @@ the GIN index
# cannot serve, so the planner walks the (guild_id[, user_id], timestamp) index). The first reads every match, the
# second RECENT / (share of messages matching): the walk wins beyond √(RECENT × messages) matches.
_NEWEST_BY_INDEX = ("c.search @@ q.query", "c.message_id + 0 DESC")
_NEWEST_BY_WALK = ("ts_match_vq(c.search, q.query)", "c.timestamp DESC")
_estimates: TTLCache[tuple[str, str], int] = TTLCache(maxsize=20_000, ttl=600)  # (url, words or "": all)


async def estimated_matches(session: AsyncSession, terms: tuple[str, ...]) -> tuple[int, int]:
    """How many messages hold any of the words, and how many the table holds, as PostgreSQL's planner estimates
    them: no row is read (cached a while, like SQLite's counts: a chat's words recur, counts change slowly, and
    they only choose the plan). The words are estimated together: a plan of one branch per word may be parallel,
    and a parallel scan's estimate is per worker, its branches in any order."""
    url = str(session.bind.url)  # type: ignore[union-attr]
    key = (url, " or ".join(sorted(set(terms))))
    if (matches := _estimates.get(key)) is None:
        plan = await session.scalar(_ESTIMATE, {"words": tsquery_words(terms)})
        matches = _estimates[key] = int(plan[0]["Plan"]["Plan Rows"])  # type: ignore[index]
    if (rows := _estimates.get((url, ""))) is None:
        rows = _estimates[(url, "")] = int(await session.scalar(_ROWS) or 0)
    return matches, rows


async def candidates(session: AsyncSession, search: Search) -> Ranked | None:
    """The bounded candidates of a search with more than MANY matches (None: rank every match)."""
    if search.bounded or not search.terms:
        return None
    matches, rows = await estimated_matches(session, search.terms)
    # The walk reads at most the guild's messages, RECENT / (share matching) of them.
    return bounded(search, walk=matches * matches > RECENT * rows) if matches > MANY else None


def bounded(search: Search, *, walk: bool) -> Ranked:
    """The newest RECENT holding any word, the DEPTH best holding every word (and all but one), each row with the
    most words it is known to hold, ranked by ts_rank × coverage²."""
    params, binds = member_param(search.user_id)
    member = " AND c.user_id = :user_id" if search.user_id is not None else ""
    terms = list(dict.fromkeys(search.terms))
    n = len(terms)
    params["words"] = tsquery_words(terms)
    binds.append(bindparam("words", type_=String()))
    match, order = _NEWEST_BY_WALK if walk else _NEWEST_BY_INDEX
    parts = [_SUBQUERY.format(name="words", cover=f"{1 / n}", match=match, member=member, order=order, limit=RECENT)]
    if n > 1:
        # websearch_to_tsquery: words side by side must all be there; "or" between groups.
        sets = {"every": [terms]} | ({"but": list(combinations(terms, n - 1))} if n > 2 else {})
        for name, groups in sets.items():
            params[name] = " or ".join(" ".join(group) for group in groups)
            binds.append(bindparam(name, type_=String()))
            cover = len(groups[0]) / n
            order = "ts_rank(c.search, q.query, 1) DESC, c.message_id DESC"
            parts.append(
                _SUBQUERY.format(
                    name=name, cover=f"{cover}", match="c.search @@ q.query", member=member, order=order, limit=DEPTH
                )
            )
    union = "\n    UNION ALL\n    ".join(parts)
    source = f"""(SELECT id, max(cover) AS cover FROM (
    {union}
    ) AS found GROUP BY id) AS k
    JOIN chat_history AS c ON c.message_id = k.id
    CROSS JOIN websearch_to_tsquery('english', :words) AS q(query)"""
    return Ranked(
        source,
        "ts_rank(c.search, q.query, 1) * k.cover * k.cover",
        "1 = 1",  # the subqueries hold the member filter
        POSTGRES_AGE,
        params,
        binds,
    )
