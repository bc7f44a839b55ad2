"""The daily summaries' search: each author's best days for some words, in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import BindParameter, Date, Float, Integer, String, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.scope import Scope
from db.search import driver, fts
from db.search.fts import Ranked, fts5_match, tsquery_words
from db.search.types import SummaryRow, decay_rate


async def search_summaries(
    session: AsyncSession,
    guild_id: int,
    terms: Sequence[str],
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
    ranked = _ranked(terms, sqlite=driver.is_sqlite(session))
    params: dict[str, object] = {
        **scoping.params(Scope(guild_id), scoping.DERIVED),
        "since": since,
        "until": until,
        "today": today,
        "rate": decay_rate(half_life_days),
        "limit": limit,
        **ranked.params,
    }
    binds: list[BindParameter[Any]] = [bindparam(k, type_=Date()) for k in ("since", "until", "today")]
    binds += [bindparam("rate", type_=Float()), bindparam("limit", type_=Integer()), *ranked.binds]
    selects = []
    for i, author in enumerate(authors):
        match, author_params, author_binds = _author_match(i, guild_id, terms, author, sqlite=driver.is_sqlite(session))
        params |= author_params
        binds += author_binds
        selects.append(_best_days(ranked, i, match))
    query = scoping.typed(text("\nUNION ALL\n".join(selects)).bindparams(*binds).columns(day=Date()), scoping.DERIVED)
    found: dict[int | None, list[SummaryRow]] = {author: [] for author in authors}
    for i, u, d, body, r, score in await session.execute(query, params):
        day = d if isinstance(d, date) else date.fromisoformat(str(d))
        found[authors[i]].append(SummaryRow(u, day, body, float(r), float(score)))
    for rows in found.values():  # UNION ALL keeps no order: each author's, as ranked
        rows.sort(key=lambda r: (-r.score, -r.day.toordinal(), r.user_id))
    return found


def _ranked(terms: Sequence[str], *, sqlite: bool) -> Ranked:
    """The summaries' source, relevance and age (in whole days) on each database; each author matches apart."""
    if sqlite:
        return Ranked(
            "summary_fts CROSS JOIN daily_summaries AS s ON s.id = summary_fts.rowid",
            "-bm25(summary_fts, 0.0, 1.0)",
            "",
            "max(0.0, julianday(:today) - julianday(s.day))",
        )
    return Ranked(
        "daily_summaries AS s, websearch_to_tsquery('english', :words) AS q(query)",
        "ts_rank(s.search, q.query, 1)",
        "",
        "greatest(0, :today - s.day)",
        {"words": tsquery_words(terms)},
        [bindparam("words", type_=String())],
    )


def _author_match(
    i: int, guild_id: int, terms: Sequence[str], author: int | None, *, sqlite: bool
) -> tuple[str, dict[str, object], list[BindParameter[Any]]]:
    """The `i`th author's match (None: anyone's) and the parameters it binds."""
    if sqlite:
        name = f"match{i}"
        match: list[BindParameter[Any]] = [bindparam(name, type_=String())]
        return f"summary_fts MATCH :{name}", {name: fts5_match(guild_id, terms, author)}, match
    params, binds = fts.member_param(author, name=f"user{i}")
    return "s.search @@ q.query" + (f" AND s.user_id = :user{i}" if author is not None else ""), params, binds


def _best_days(ranked: Ranked, i: int, match: str) -> str:
    """The `i`th author's best `:limit` days, labelled with `i`."""
    return f"""SELECT * FROM (
            SELECT {i} AS author, s.user_id, s.day, s.summary, {ranked.relevance} AS relevance,
                   {ranked.relevance} * exp(-:rate * {ranked.age}) AS score
            FROM {ranked.source}
            WHERE {match} AND {scoping.where(scoping.DERIVED, "s")}
              AND s.day >= :since AND s.day < :until AND s.summary != ''
            ORDER BY score DESC, s.day DESC, s.user_id
            LIMIT :limit
        ) AS a{i}"""
