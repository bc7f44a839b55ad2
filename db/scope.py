"""The read scope: which stored rows a reader may see. Written once here, composed into every read.

A reader is always inside one guild, and usually in one channel or thread ("here"). It may see:
- rows of its own guild only (`guild`);
- nothing by members who opted out (`optout`);
- messages of channels that feed guild-wide memory, and of the channel it is in (`channel`). A channel does
  not feed memory when an admin excluded it, or (mode "auto") when @everyone cannot read it; a thread follows
  its own type (a private thread is private) and inherits its parent channel's scope;
- only people's speech among themselves (`speech`): never the bot's own replies, which are derived data, nor
  messages addressed to the bot (questions, commands, chat with it), which are the bot's conversation, not
  evidence of what anyone said. Recall and summaries alike.

Each filter is a named SQL fragment over a table alias, so that queries written as text (full-text search)
and queries built with SQLAlchemy Core use the very same words; tests remove each one in turn and watch a
leak appear (tests/db/test_scope.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import BigInteger, TextClause, TextualSelect, bindparam, text

from db.records import Kind

Query = TypeVar("Query", TextClause, TextualSelect)  # a text query, with or without declared columns

_HIDDEN = "(cp.mode = 'exclude' OR (cp.mode = 'auto' AND cp.is_private))"
NOT_SHARED = f"SELECT cp.channel_id FROM channel_privacy AS cp WHERE cp.guild_id = :scope_guild AND {_HIDDEN}"
# A thread left on "auto" is as hidden as its parent channel.
IN_HIDDEN_PARENT = (
    "SELECT t.channel_id FROM channel_privacy AS t WHERE t.guild_id = :scope_guild AND t.mode = 'auto' "
    f"AND t.parent_id IN ({NOT_SHARED})"
)
OPTED_OUT = "SELECT o.user_id FROM user_optouts AS o WHERE o.guild_id = :scope_guild"

# name -> fragment over a table alias `{t}`; every fragment holds on its own (tests drop one at a time).
FILTERS: dict[str, str] = {
    "guild": "{t}.guild_id = :scope_guild",
    "optout": "{t}.user_id NOT IN (" + OPTED_OUT + ")",
    "channel": "({t}.channel_id = :scope_here OR {t}.channel_id NOT IN (" + NOT_SHARED + "))",
    "parent": "({t}.channel_id = :scope_here OR {t}.channel_id NOT IN (" + IN_HIDDEN_PARENT + "))",
    "speech": f"{{t}}.kind = {int(Kind.SPEECH)}",
}
# Which filters each kind of read applies.
MESSAGES = ("guild", "optout", "channel", "parent", "speech")  # recall, vectors, turns: what a question may find
SUMMARY_INPUT = ("guild", "optout", "channel", "parent", "speech")  # summaries are built from (here: None)
DERIVED = ("guild", "optout")  # summaries, histories and rollups of members (built from shared speech only)
GUILD = ("guild",)  # admin views of the whole guild: stats, a member's own export


@dataclass(frozen=True, slots=True)
class Scope:
    """Who reads: a guild, and the channel or thread the question was asked in (None: guild-wide only)."""

    guild_id: int
    here: int | None = None


def where(kind: tuple[str, ...], alias: str) -> str:
    """The SQL condition of a kind of read over table alias `alias` (parameters :scope_guild, :scope_here)."""
    return " AND ".join(FILTERS[name].format(t=alias) for name in kind) or "1 = 1"


def params(scope: Scope, kind: tuple[str, ...] | None = None) -> dict[str, int | None]:
    """The values for the condition's parameters (those `kind` uses, or both)."""
    values = {"scope_guild": scope.guild_id, "scope_here": scope.here}
    return values if kind is None else {name: values[name] for name in _names(kind)}


def _names(kind: tuple[str, ...]) -> list[str]:
    sql = where(kind, "t")
    return [name for name in ("scope_guild", "scope_here") if f":{name}" in sql]


def typed(query: Query, kind: tuple[str, ...]) -> Query:
    """Declare the scope parameters' types on a text query (asyncpg needs them for NULL and comparisons)."""
    return query.bindparams(*(bindparam(name, type_=BigInteger()) for name in _names(kind)))


def clause(kind: tuple[str, ...], alias: str, scope: Scope) -> TextClause:
    """The condition as a bound SQLAlchemy clause, for Core queries (`select(...).where(clause(...))`)."""
    values = params(scope)
    return text(where(kind, alias)).bindparams(*(bindparam(n, values[n], type_=BigInteger()) for n in _names(kind)))
