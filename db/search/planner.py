"""Which candidates SQLite ranks for a message search, chosen by how many rows hold each word and scope token.

Without a period filter, SQLite does not rank every match. Two costs grow with the database, and the plan keeps
both bounded:
  - ranking: bm25 reads each matching row's length, so ranking every match of a common word (a tenth of a
    ten-million-message database) costs seconds;
  - bm25's idf: it counts every row holding each word of the query, once per query, so a word (or a member's
    scope token) found in a million rows costs ~100 ms even when two rows are ranked.
So words and scope tokens found in more than COMMON rows (counted once, capped, cached for a while) leave the
full-text query: such a word says little about which message is meant (the final ranking in Python still counts
it), and a common member or guild scope is filtered by the join instead. With what is left:
  - up to MANY matches: all of them are ranked (exact, and cheap at that size);
  - more: the DEPTH best containing *every* word (a small intersection, and what coord² favours), the best
    containing all but one word for longer questions, and the RECENT newest containing any word (message IDs are
    snowflakes: the newest are the highest rowids, read without ranking anything).
  - and the RECENT newest rows holding any of the common words, unranked, after the ranked ones (with only
    common words, they are all there is: recency is the one signal left).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cachetools import TTLCache
from sqlalchemy import BigInteger, String, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from db.search import driver
from db.search.fts import SQLITE_AGE, Ranked, match, member_param, scopes, words
from db.search.types import Search

MANY, DEPTH, RECENT, COMMON = 3_000, 1000, 300, 50_000
CUT = 4  # with up to MANY matches, the best CUT × limit of them are read first (see cut)
_CANDIDATE = (
    "SELECT * FROM (SELECT rowid AS id, {rel} AS rel, {cover} AS cover FROM chat_fts "
    "WHERE chat_fts MATCH :{name}{order})"
)
_BM25 = "-bm25(chat_fts, 0.0, 1.0)"
Plan = dict[str, tuple[str, str, float, str]]  # subquery -> (FTS5 match, ORDER BY … LIMIT …, share of words, rel)
Guess = tuple[list[str], Plan, bool]  # tokens not counted lately, the cut they most likely give, all words among them
_counts: TTLCache[tuple[str, str], int] = TTLCache(maxsize=20_000, ttl=600)


def ranked(plan: Plan, user_id: int | None) -> Ranked:
    """The plan's candidates as a ranked read: relevance × coverage², a member filtered by the join."""
    params, binds = member_param(user_id)
    for name, (match_text, *_) in plan.items():
        params[name] = match_text
        binds.append(bindparam(name, type_=String()))
    return Ranked(
        _candidates(plan),
        "k.rel * k.cover * k.cover",
        "c.user_id = :user_id" if user_id is not None else "1 = 1",  # a common scope left the FTS query
        SQLITE_AGE,
        params,
        binds,
    )


def _candidates(plan: Plan) -> str:
    """The union of candidate subqueries, each row once with the most words it is known to contain."""
    union = "\n    UNION ALL\n    ".join(
        _CANDIDATE.format(name=name, order=order, cover=cover, rel=rel) for name, (_, order, cover, rel) in plan.items()
    )
    return (
        f"(SELECT id, max(rel) AS rel, max(cover) AS cover FROM (\n    {union}\n) GROUP BY id) AS k "
        "CROSS JOIN chat_history AS c ON c.message_id = k.id"
    )


async def count_all(session: AsyncSession, tokens: list[str]) -> None:
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
    if (lean := await driver.sqlite_rows(session, f"SELECT {columns}", params)) is not None:  # the only caller
        counts = lean[0]
    else:
        counts = (await session.execute(text(f"SELECT {columns}"), params)).one()
    for token, count in zip(missing, counts, strict=True):
        _counts[(url, token)] = int(count)


async def count_ahead(session: AsyncSession, terms: Sequence[str], members: list[int]) -> None:
    """Count, in one statement, what the SQLite plans of the searches about to run will ask about: these words
    and these members (nothing to do elsewhere, or for what was counted lately)."""
    if driver.is_sqlite(session):
        await count_all(session, [s for m in members for s in scopes(None, m)] + words(terms))


async def _count(session: AsyncSession, token: str) -> int:
    """How many rows hold this word or scope token, up to COMMON + 1 (cached: it changes slowly)."""
    key = (str(session.bind.url), token)  # type: ignore[union-attr]
    if (count := _counts.get(key)) is None:
        await count_all(session, [token])
        count = _counts.get(key, COMMON + 1)  # expired at once (a full cache): treated as common
    return count


async def more_than_cut(session: AsyncSession, search: Search) -> bool:
    """Whether the words not common may hold more rows than the cut reads (their counts, taken by the plan just
    before)."""
    counts = [await _count(session, w) for w in words(search.terms)]
    return sum(c for c in counts if c <= COMMON) > CUT * search.limit


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
    session: AsyncSession, guild_id: int, terms: Sequence[str], user_id: int | None
) -> tuple[list[str], list[str], str]:
    """A search's scope tokens and words, and the database they are counted for (the key of `_counts`)."""
    scope_tokens = scopes(guild_id if await _shared_database(session, guild_id) else None, user_id)
    return scope_tokens, words(terms), str(session.bind.url)  # type: ignore[union-attr]


async def sqlite_plan(session: AsyncSession, guild_id: int, terms: Sequence[str], user_id: int | None) -> Plan:
    """Which candidates to rank (see above); `cover` lets the pool prefer the complete matches, like coord²."""
    scope_tokens, phrases, url = await _tokens(session, guild_id, terms, user_id)
    await count_all(session, scope_tokens + phrases)
    return _plan(scope_tokens, phrases, lambda token: _counts.get((url, token), COMMON + 1))  # expired: common


async def guess(session: AsyncSession, search: Search) -> Guess | None:
    """With words or scopes not counted lately: those tokens and the cut their plan most likely is (the
    uncounted guessed rare: a common word is counted when first asked about, and stays counted a while), and
    whether every word is among them. None when everything was counted lately or no cut applies."""
    scope_tokens, phrases, url = await _tokens(session, search.guild_id, search.terms, search.user_id)
    missing = sorted({t for t in scope_tokens + phrases if (url, t) not in _counts})
    if not missing:
        return None
    guessed = _plan(scope_tokens, phrases, lambda token: _counts.get((url, token), 0))
    if (the_cut := cut(guessed, search)) is None:
        return None
    return missing, the_cut, set(phrases) <= set(missing)


def _plan(scope_tokens: list[str], phrases: list[str], count: Callable[[str], int]) -> Plan:
    """`sqlite_plan` with the counts of its tokens given."""
    scope_tokens = [s for s in scope_tokens if count(s) <= COMMON]
    rare = [w for w in phrases if count(w) <= COMMON]
    newest = f" ORDER BY rowid DESC LIMIT {RECENT}"
    if not rare:
        return {"m_common": (match(scope_tokens, phrases), newest, 1 / len(phrases), "1.0")}
    n = len(rare)
    # The newest rows holding only common words come unranked (rel 0: after every ranked one, newest first).
    common = {"m_common": (match(scope_tokens, phrases), newest, 1 / len(phrases), "0.0")}
    plan: Plan = common if n < len(phrases) else {}
    # Each word's count is known (cached) and their sum bounds the matches: no statement to count them again.
    if sum(count(w) for w in rare) <= MANY:  # a LIMIT keeps bm25 from flattening
        return plan | {"m_any": (match(scope_tokens, rare), " LIMIT -1", 1.0, _BM25)}
    rank = " ORDER BY bm25(chat_fts, 0.0, 1.0) LIMIT {}"
    plan["m_recent"] = (match(scope_tokens, rare), newest, 1 / n, _BM25)
    if n > 1:
        plan["m_all"] = (match(scope_tokens, rare, every=True), rank.format(DEPTH), 1.0, _BM25)
    if n > 2:  # all but one word, for questions of three words or more
        for i in range(n):
            but = rare[:i] + rare[i + 1 :]
            plan[f"m_but{i}"] = (match(scope_tokens, but, every=True), rank.format(DEPTH // n), (n - 1) / n, _BM25)
    return plan


def cut(plan: Plan, search: Search) -> Plan | None:
    """The plan reading only the CUT × `limit` best matches, where that gives the same rows whenever it gives
    `limit` of them (else the whole plan runs): every match is ranked by bm25 alone (no decay, no other
    subquery), ties broken as the final order breaks them, and the read scope can only drop rows (a member
    filter not in the full-text query could drop most of them). Ranking every match is cheap; reading the
    row of each from chat_history was most of a search (9 of 15 ms for 2,550 matches at 1 M messages)."""
    if set(plan) != {"m_any"} or search.half_life_days > 0:
        return None
    match_text, _, cover, rel = plan["m_any"]
    if search.user_id is not None and scopes(None, search.user_id)[0] not in match_text:
        return None
    order = f" ORDER BY bm25(chat_fts, 0.0, 1.0), rowid DESC LIMIT {CUT * search.limit}"
    return {"m_any": (match_text, order, cover, rel)}
