"""PostgreSQL's plan for recall's message search, as asyncpg runs it: prepared, and after five runs possibly planned
once for any parameters (a generic plan). That plan must still find the words through the GIN index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.ext.asyncio import async_sessionmaker

from db.engine import create_engine
from db.search import messages as store
from db.search import planner, postgres
from db.search.types import Search
from tests.conftest import _asyncpg_dsn, _truncate_pg
from tests.factories import ALICE, CHANNEL, GUILD, T0

MESSAGES = 100_000


def _literal(value: object) -> str:
    """A parameter as a quoted SQL literal (EXECUTE takes no bound parameters)."""
    if isinstance(value, datetime):
        value = value.astimezone(UTC).isoformat()
    return "'" + str(value).replace("'", "''") + "'"


async def _generic_plan(url: str, statement: str, params: tuple[Any, ...]) -> str:
    connection = await asyncpg.connect(_asyncpg_dsn(url))
    try:
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        await connection.execute(f"PREPARE search AS {statement}")
        rows = await connection.fetch(f"EXPLAIN EXECUTE search({', '.join(map(_literal, params))})")
    finally:
        await connection.close()
    return "\n".join(r[0] for r in rows)


async def test_the_generic_plan_finds_the_words_through_the_gin_index(pg_database: str):
    await _truncate_pg(pg_database)
    connection = await asyncpg.connect(_asyncpg_dsn(pg_database))
    try:
        rows = [
            (2**60 + i, GUILD, CHANNEL, ALICE + i % 40, f"{'needle' if i % 2_000 == 0 else 'hay'} number {i}",
             T0 - timedelta(minutes=MESSAGES - i))
            for i in range(MESSAGES)
        ]  # fmt: skip
        columns = ["message_id", "guild_id", "channel_id", "user_id", "message_text", "timestamp"]
        await connection.copy_records_to_table("chat_history", records=rows, columns=columns)
        await connection.execute("ANALYZE chat_history")
    finally:
        await connection.close()
    engine = create_engine(pg_database)
    sent: list[tuple[str, tuple[Any, ...]]] = []

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def keep(conn: object, cursor: object, statement: str, params: Any, context: object, many: bool) -> None:
        if "ts_rank" in statement:
            sent.append((statement, tuple(params)))

    try:
        async with async_sessionmaker(engine)() as session:
            search = Search(GUILD, ("needle",), now=T0, here=CHANNEL, limit=10)
            found = await store.search_messages(session, search)
    finally:
        await engine.dispose()
    assert len(found) == 10 and all("needle" in row.text for row in found)
    plan = await _generic_plan(pg_database, *sent[0])
    # Not the guild's (guild_id, timestamp) index with the words tested on each of its messages.
    assert "Bitmap Index Scan on ix_chat_history_search" in plan, plan
    assert "ix_chat_history_guild_ts" not in plan and "Seq Scan on chat_history" not in plan, plan


async def _fill(url: str, bodies: list[str]) -> None:
    connection = await asyncpg.connect(_asyncpg_dsn(url))
    try:
        rows = [
            (2**60 + i, GUILD, CHANNEL, ALICE + i % 40, body, T0 - timedelta(minutes=len(bodies) - i))
            for i, body in enumerate(bodies)
        ]
        columns = ["message_id", "guild_id", "channel_id", "user_id", "message_text", "timestamp"]
        await connection.copy_records_to_table("chat_history", records=rows, columns=columns)
        await connection.execute("ANALYZE chat_history")
    finally:
        await connection.close()


async def test_thousands_of_matches_are_all_ranked_where_sqlite_would_bound_them(pg_database: str):
    """The bounded plan cost more than ranking every match at a few thousand (bench.soak's month 12: a named
    member's mentions); PostgreSQL ranks up to MANY, past SQLite's limit."""
    await _truncate_pg(pg_database)
    await _fill(pg_database, ["alpha alone here" if i % 2 else "beta alone there" for i in range(8_000)])
    postgres._estimates.clear()
    engine = create_engine(pg_database)
    try:
        async with async_sessionmaker(engine)() as session:
            search = Search(GUILD, ("alpha", "beta"), now=T0, here=CHANNEL, limit=20)
            matches, _ = await postgres.estimated_matches(session, search.terms)
            assert planner.MANY < matches <= postgres.MANY
            assert await postgres.candidates(session, search) is None  # every match ranked
    finally:
        await engine.dispose()


async def test_common_words_rank_a_bounded_set_that_keeps_the_best_and_the_newest(pg_database: str):
    """More matches than MANY: the messages holding every word (old ones here) and the newest are still found,
    whichever way the newest are read, and as ranking every match finds them."""
    await _truncate_pg(pg_database)
    both = {7, 100, 900}  # message positions holding both words, long ago
    bodies = [
        "alpha beta together" if i in both else ("alpha alone here" if i % 2 else "beta alone there")
        for i in range(16_000)
    ]
    await _fill(pg_database, bodies)
    postgres._estimates.clear()  # this run's database held another test's guild a moment ago
    engine = create_engine(pg_database)
    try:
        async with async_sessionmaker(engine)() as session:
            search = Search(GUILD, ("alpha", "beta"), now=T0, here=CHANNEL, limit=20)
            matches, rows = await postgres.estimated_matches(session, search.terms)
            assert matches > postgres.MANY and rows == len(bodies)
            assert await postgres.candidates(session, search) is not None
            every = await store._search_messages(session, search, plan=None)  # ranking every match
            found = {
                walk: await store._search_messages(
                    session, search, plan=None, ranked=postgres.bounded(search, walk=walk)
                )
                for walk in (False, True)
            }
            public = await store.search_messages(session, search)
    finally:
        await engine.dispose()
    wanted = {2**60 + i for i in both}
    assert {r.message_id for r in every[:3]} == wanted
    newest = 2**60 + len(bodies) - 1
    for rows in [*found.values(), public]:
        assert {r.message_id for r in rows[:3]} == wanted  # every word: ranked first
        assert newest in {r.message_id for r in rows}  # the newest holding a word: among the candidates
    assert [r.message_id for r in found[False]] == [r.message_id for r in found[True]]


async def test_the_message_indexs_pending_list_stays_small(pg_database: str):
    """Every GIN scan reads the index's pending list of entries not merged yet: 4 MB by default (7–61 ms a scan on
    bench.soak's guild at month 12, the list full). Migration 0016 keeps it to 256 kB (32 pages of 8 kB)."""
    await _truncate_pg(pg_database)
    connection = await asyncpg.connect(_asyncpg_dsn(pg_database))
    try:
        await connection.fetchval("SELECT gin_clean_pending_list('ix_chat_history_search'::regclass)")
        rows = [
            (2**60 + i, GUILD, CHANNEL, ALICE, " ".join(f"word{(i * 7 + j) % 5_000}" for j in range(12)),
             T0 - timedelta(minutes=10_000 - i))
            for i in range(10_000)
        ]  # fmt: skip
        columns = ["message_id", "guild_id", "channel_id", "user_id", "message_text", "timestamp"]
        await connection.copy_records_to_table("chat_history", records=rows, columns=columns)
        pending = await connection.fetchval("SELECT gin_clean_pending_list('ix_chat_history_search'::regclass)")
    finally:
        await connection.close()
    assert pending <= 256 * 1024 // 8192
