"""The full-text query languages: FTS5's MATCH on SQLite, a tsvector's websearch query on PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import BigInteger, BindParameter, String, bindparam

from db.search.types import Search

# Objects the migrations create for search that the models deliberately do not describe.
SEARCH_TABLE_PREFIXES = ("chat_fts", "summary_fts")
SEARCH_COLUMN = "search"

SQLITE_AGE = "max(0.0, julianday(:now) - julianday(c.timestamp))"  # in days
POSTGRES_AGE = "greatest(0.0, extract(epoch FROM (:now - c.timestamp)) / 86400.0)"

# Every message matching the words, found by the GIN index alone, with its ts_rank; the guild, scope, member and
# period filter the rows it gives. OFFSET 0 keeps those filters out of the subquery: asyncpg prepares each
# statement, and after five runs PostgreSQL may plan it once for any parameters; that generic plan, seeing a
# guild and a period it cannot estimate, walked the guild's (guild_id, timestamp) index and tested the words on
# every message (150 ms at 200,000 messages, where the GIN index finds 1,300 matches in 9 ms).
POSTGRES_MATCHES = """(
        SELECT c.message_id, c.guild_id, c.channel_id, c.user_id, c.kind, c.message_text, c.timestamp,
               c.reply_to_id, ts_rank(c.search, q.query, 1) AS rel
        FROM chat_history AS c, websearch_to_tsquery('english', :words) AS q(query)
        WHERE c.search @@ q.query OFFSET 0
    ) AS c"""


@dataclass(frozen=True, slots=True)
class Ranked:
    """A ranked read's SQL pieces: where its rows come from, how relevant each is, which rows match, how old each
    is (in days), and the parameters they bind."""

    source: str
    relevance: str
    match: str
    age: str
    params: dict[str, object] = field(default_factory=dict)
    binds: list[BindParameter[Any]] = field(default_factory=list)


def fts5_match(guild_id: int | None, terms: Sequence[str], user_id: int | None, *, every: bool = False) -> str:
    """An FTS5 query: the guild (and member) scope AND any (or every) term (terms are plain \\w+ words)."""
    return match(scopes(guild_id, user_id), words(terms), every=every)


def scopes(guild_id: int | None, user_id: int | None) -> list[str]:
    """The full-text tokens of a guild's and a member's messages (the scope column: "g<guild> u<user>")."""
    return ([f"scope:g{guild_id}"] if guild_id is not None else []) + (
        [f"scope:u{user_id}"] if user_id is not None else []
    )


def words(terms: Sequence[str]) -> list[str]:
    """The terms as FTS5 phrases in the message body column."""
    return [f'body:"{t}"' for t in terms]


def match(scope_tokens: list[str], phrases: list[str], *, every: bool = False) -> str:
    """An FTS5 query: every scope token AND any (or every) phrase."""
    joined = (" AND " if every else " OR ").join(phrases)
    return " AND ".join([*scope_tokens, f"({joined})"])


def tsquery_words(terms: Sequence[str]) -> str:
    """The terms as PostgreSQL's websearch_to_tsquery reads any of them."""
    return " or ".join(terms)


def member_param(user_id: int | None, *, name: str = "user_id") -> tuple[dict[str, object], list[BindParameter[Any]]]:
    """The parameter of a member filter (nothing without a member)."""
    if user_id is None:
        return {}, []
    return {name: user_id}, [bindparam(name, type_=BigInteger())]


def matching_messages(search: Search, *, sqlite: bool) -> Ranked:
    """Every message matching the search's words (and member), by the database's own relevance."""
    if sqlite:
        # CROSS JOIN fixes the order: full-text matches first, then their rows (else SQLite may walk the
        # guild's index and run the full-text query once per row).
        return Ranked(
            "chat_fts CROSS JOIN chat_history AS c ON c.message_id = chat_fts.rowid",
            "-bm25(chat_fts, 0.0, 1.0)",
            "chat_fts MATCH :match",
            SQLITE_AGE,
            {"match": fts5_match(search.guild_id, search.terms, search.user_id)},
            [bindparam("match", type_=String())],
        )
    params, binds = member_param(search.user_id)
    return Ranked(
        POSTGRES_MATCHES,
        "c.rel",
        "c.user_id = :user_id" if search.user_id is not None else "1 = 1",
        POSTGRES_AGE,
        {"words": tsquery_words(search.terms), **params},
        [bindparam("words", type_=String()), *binds],
    )
