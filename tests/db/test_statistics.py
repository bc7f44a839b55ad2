"""The planner's statistics after an import describe the tables as they are, and recall's queries look messages up
by key, on both databases.

A guild's first small import is analysed; a large one follows. Statistics left from it described a third of a table
that now holds 21,000 rows: SQLite's PRAGMA optimize looks again only at tenfold growth, and PostgreSQL's autovacuum
had not analysed it yet. Plans made
from such statistics walked a guild's (guild, time) index testing message ids instead of looking each one up.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event, text

from bench.conversations import generate, write_exports
from bot.importer import import_file
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from db import statistics

SMALL, LARGE = 300, 20_000


@pytest.fixture
async def imported(engine, settings, tmp_path: Path):
    small, large = generate(SMALL, seed=3), generate(LARGE, seed=7)
    settings = settings.model_copy(update={"embedding_model": "none", "memory_wait_seconds": 600})
    memory = MemoryManager(engine, settings, clock=FakeClock(large.now))
    await memory.start(background=False)
    for conv, folder in ((small, "small"), (large, "large")):
        for path in write_exports(conv, tmp_path / folder):
            await import_file(memory, path, include_bots=False, progress=False)
    yield memory, large
    await memory.close()


async def described_rows(memory: MemoryManager) -> tuple[float, int]:
    """How many rows chat_history holds by its statistics, and by count."""
    async with memory.sessions() as session:
        held = int(await session.scalar(text("SELECT count(*) FROM chat_history")) or 0)
        if session.bind.dialect.name == "sqlite":
            stat = await session.scalar(
                text("SELECT stat FROM sqlite_stat1 WHERE tbl = 'chat_history' AND idx = 'ix_chat_history_guild_ts'")
            )
            return float(str(stat).split()[0]) if stat else 0.0, held
        return float(await session.scalar(text("SELECT reltuples FROM pg_class WHERE relname = 'chat_history'"))), held


def capture_statements(memory: MemoryManager) -> tuple[list[tuple[str, object]], object]:
    """Every SELECT on chat_history the engine sends from now on (SQLite: as its driver runs it, parameters bound)."""
    engine, sent = memory.engine, []
    if engine.dialect.name == "sqlite":
        # Recall's hot reads go through the driver's own connection (db/search/driver.py), past SQLAlchemy's events.
        def trace(statement: str) -> None:
            if "chat_history" in statement and statement.lstrip().upper().startswith(("SELECT", "WITH")):
                sent.append((statement, ()))

        def on_connect(dbapi_connection, _record) -> None:
            dbapi_connection.driver_connection._conn.set_trace_callback(trace)

        event.listen(engine.sync_engine, "connect", on_connect)
        return sent, on_connect

    def on_execute(_conn, _cursor, statement, parameters, _context, executemany) -> None:
        reads = "chat_history" in statement and statement.lstrip().upper().startswith(("SELECT", "WITH"))
        if reads and not executemany:
            sent.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", on_execute)
    return sent, on_execute


async def plans(memory: MemoryManager, sent: list[tuple[str, object]]) -> list[tuple[str, list[str]]]:
    async with memory.engine.connect() as connection:
        raw = (await connection.get_raw_connection()).driver_connection
        out = []
        for statement, parameters in sent:
            if memory.engine.dialect.name == "sqlite":
                cursor = await raw.execute("EXPLAIN QUERY PLAN " + statement)
                out.append((statement, [row[3] for row in await cursor.fetchall()]))
            else:
                rows = await raw.fetch("EXPLAIN " + statement, *parameters)
                out.append((statement, [row[0].strip() for row in rows]))
        return out


async def test_after_an_import_statistics_are_true_and_recall_looks_messages_up_by_key(imported):
    memory, conv = imported
    described, held = await described_rows(memory)
    assert held >= LARGE
    assert not statistics.drifted(described, held), f"statistics describe {described:.0f} of {held} rows"

    await memory.engine.dispose()  # new connections, so that each one traces what it runs
    sent, listener = capture_statements(memory)
    try:
        for question in conv.questions[:12]:
            await memory.recollection.recollect(conv.guild_id, question.text, channel_id=conv.channels[0].id)
    finally:
        kind = "connect" if memory.engine.dialect.name == "sqlite" else "before_cursor_execute"
        event.remove(memory.engine.sync_engine, kind, listener)
    assert sent, "recall ran no statement on chat_history"
    for statement, plan in await plans(memory, sent):
        if memory.engine.dialect.name == "sqlite":
            assert "SCAN c" not in plan, (statement, plan)
            if "chat_fts" in statement and " AS c" in statement:
                reads = [line for line in plan if line.startswith("SEARCH c ")]
                assert reads and all("(message_id=?)" in line for line in reads), (statement, plan)
        else:
            # A nested loop that walks the guild's index and tests each row against a message id.
            assert not any(line.startswith("Join Filter: (c.message_id") for line in plan), (statement, plan)
