"""A catalog-driven search for what a deletion should have removed: every table, the index, the files, the caches.

The tables come from the database's own catalog (sqlite_master / information_schema), so a table added later
is searched without anyone remembering to add it; SQLite's full-text shadow tables are read too, and their
terms through an fts5vocab view (their pages compress terms against their neighbours, so the raw bytes alone
could miss one). On SQLite the database file and its write-ahead log are read as bytes. The caches are found
by walking the MemoryManager's object graph.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import or_, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.memory.manager import MemoryManager
from db.models import ChatMessage, DeadLetter

# Rows that may name a deleted member for a reason: an opt-out is kept so that they stay out.
ALLOWED = {"user_optouts", "alembic_version"}


def _needle_bits(word: str) -> list[bytes]:
    # A stemmed or prefix-compressed copy of the word still holds its middle letters.
    return [word.encode(), word[1:6].encode()]


def _text_has(value: str, words: Iterable[str]) -> list[str]:
    low = value.casefold()
    return [w for w in words if w in low or w[1:6] in low]


async def tables_with(
    memory: MemoryManager, words: list[str], member: int | None, allowed: set[str] = ALLOWED
) -> list[str]:
    """'table: what' for every stored value holding one of `words` or the member's id."""
    found: list[str] = []
    sqlite = memory.engine.dialect.name == "sqlite"
    async with memory.engine.connect() as conn:
        if sqlite:
            names = [r[0] for r in await conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))]
        else:
            names = [
                r[0]
                for r in await conn.execute(
                    text("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
                )
            ]
        for table in names:
            if table in allowed or (sqlite and _virtual(table)):
                continue
            for row in await conn.execute(text(f'SELECT * FROM "{table}"')):
                for value in row:
                    if isinstance(value, str) and (hit := _text_has(value, words)):
                        found.append(f"{table}: {hit} in {value[:80]!r}")
                    elif isinstance(value, bytes | memoryview) and (
                        hit := [w for w in words if any(b in bytes(value) for b in _needle_bits(w))]
                    ):
                        found.append(f"{table}: {hit} in bytes")
                    if member is not None and (value == member or (isinstance(value, str) and str(member) in value)):
                        found.append(f"{table}: member {member} in {str(value)[:80]!r}")
        if sqlite:
            for index in ("chat_fts", "summary_fts"):
                await conn.execute(
                    text(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{index} USING fts5vocab(main, {index}, 'row')")
                )
                for (term,) in await conn.execute(text(f"SELECT term FROM temp.v_{index}")):
                    if hit := _text_has(term, [w[:5] for w in words]):
                        found.append(f"{index} terms: {hit} as {term!r}")
                    if member is not None and term == f"u{member}":
                        found.append(f"{index} terms: member scope {term!r}")
    return found


def _virtual(table: str) -> bool:
    # The FTS5 tables themselves are contentless views over their shadow tables (read as tables above).
    return table in {"chat_fts", "summary_fts"}


def files_with(memory: MemoryManager, words: list[str]) -> list[str]:
    """SQLite only: the database file and its write-ahead log, as bytes."""
    if memory.engine.dialect.name != "sqlite":
        return []
    path = Path(str(memory.engine.url.database))
    found = []
    for file in (path, path.with_name(path.name + "-wal")):
        if file.exists():
            data = file.read_bytes()
            found += [f"{file.name}: {w!r}" for w in words if w.encode() in data]
    return found


def caches_with(memory: MemoryManager, words: list[str], member: int | None) -> list[str]:
    """Every mapping, set, list and deque reachable from the MemoryManager, searched by repr."""
    found: list[str] = []
    seen: set[int] = set()

    def walk(obj: Any, path: str, depth: int) -> None:
        if id(obj) in seen or depth > 6 or isinstance(obj, str | bytes | int | float | type):
            return
        seen.add(id(obj))
        if isinstance(obj, Mapping | set | frozenset | list | tuple) or type(obj).__name__ == "deque":
            shown = repr(obj)
            if hit := _text_has(shown, words):
                found.append(f"cache {path}: {hit}")
            if member is not None and str(member) in shown and not path.endswith("_optouts"):
                found.append(f"cache {path}: member {member}")
            return
        if not type(obj).__module__.startswith(("bot.", "db.", "cachetools")):
            return
        attributes = getattr(obj, "__dict__", {})
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                attributes = {**attributes, name: getattr(obj, name)}
        for name, value in attributes.items():
            walk(value, f"{path}.{name}", depth + 1)

    gc.collect()
    walk(memory, "memory", 0)
    return found


async def residue(
    memory: MemoryManager, words: list[str], member: int | None = None, *, allowed: set[str] = ALLOWED
) -> list[str]:
    """Everything of `words` (or of the member) still kept anywhere, after pending writes, scrubs and the file
    rewrite that deletions schedule (SQLITE_COMPACT_SECONDS later in production, at once here)."""
    await memory.flush()
    await memory.admin.compact_pending()
    return (
        await tables_with(memory, words, member, allowed)
        + files_with(memory, words)
        + caches_with(memory, words, member)
    )


async def forgotten_in_clear(engine: AsyncEngine, member: int, *, said_until: datetime) -> list[str]:
    """Where a forgotten member's id is still written in clear against what her forget-me (at `said_until`) promises,
    whatever way came in after it: her messages and others' mentions of her (`<@id>`, `<@!id>`) said until then, and
    dead letters naming her (their text or mentions at any time; as author, until then). Empty when it holds."""
    marks = (f"<@{member}>", f"<@!{member}>")
    found: list[str] = []
    async with engine.connect() as conn:
        said = select(ChatMessage.message_id, ChatMessage.user_id).where(
            ChatMessage.timestamp <= said_until,
            or_(ChatMessage.user_id == member, *(ChatMessage.message_text.contains(mark) for mark in marks)),
        )
        for message_id, author in await conn.execute(said):
            found.append(f"chat_history {message_id}: {'hers' if author == member else 'mentions her'}")
        for dead_id, author, at, payload in await conn.execute(
            select(DeadLetter.id, DeadLetter.user_id, DeadLetter.at, DeadLetter.payload)
        ):
            fields = json.loads(payload)
            named = any(mark in str(fields.get("content", "")) for mark in marks)
            named = named or member in (fields.get("mentioned_user_ids") or ())
            hers = author == member and at is not None and _aware(at) <= said_until
            if named or hers:
                found.append(f"dead_letters {dead_id}: {'hers' if hers else 'names her'}")
    return found


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
