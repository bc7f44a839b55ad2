"""SQLite's full-text index fed per batch (migration 0011) holds exactly what the rows say, as the trigger did.

The index is contentless, so a wrong 'delete' or a row indexed twice would not show in a query until it
corrupts one: every check here compares the whole index, term by term and position by position
(fts5vocab 'instance'), with an index built from scratch out of the rows now stored.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.memory.manager import MemoryManager
from db.engine import create_engine
from db.records import IncomingMessage, MessageDelete, MessageEdit

GUILD, CHANNEL = 2**60 + 1, 2**60 + 2
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TOKENIZER = "porter unicode61 remove_diacritics 2"  # as migration 0005 made chat_fts


def said(i: int, content: str, *, edited: int | None = None, user: int = 0) -> IncomingMessage:
    return IncomingMessage(
        GUILD,
        CHANNEL,
        2**60 + 1000 + i,
        2**60 + 500 + user,
        f"member{user}",
        content,
        T0 + timedelta(minutes=i),
        edited_at=None if edited is None else T0 + timedelta(minutes=edited),
    )


def index_differences(path: Path) -> list[tuple[object, ...]]:
    """Entries in chat_fts that a fresh index of chat_history's speech lacks, and the other way round."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.fresh USING fts5(scope, body, content='', tokenize='{TOKENIZER}')")
        conn.execute(
            "INSERT INTO temp.fresh(rowid, scope, body) "
            "SELECT message_id, 'g' || guild_id || ' u' || user_id, message_text FROM chat_history WHERE kind = 0"
        )
        conn.execute("CREATE VIRTUAL TABLE temp.live_terms USING fts5vocab(main, chat_fts, instance)")
        conn.execute("CREATE VIRTUAL TABLE temp.fresh_terms USING fts5vocab(temp, fresh, instance)")
        columns = "term, doc, col, offset"
        live = conn.execute(f"SELECT {columns} FROM temp.live_terms EXCEPT SELECT {columns} FROM temp.fresh_terms")
        missing = conn.execute(f"SELECT {columns} FROM temp.fresh_terms EXCEPT SELECT {columns} FROM temp.live_terms")
        found = [("extra", *row) for row in live] + [("missing", *row) for row in missing]
        conn.execute("INSERT INTO chat_fts(chat_fts, rank) VALUES ('integrity-check', 0)")  # raises if corrupt
        assert conn.execute("SELECT count(*) FROM chat_fts_deferred").fetchone() == (0,)
        return found
    finally:
        conn.close()


@pytest.fixture
def sqlite_path(sqlite_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "fts.db"
    path.write_bytes(sqlite_template.read_bytes())
    return path


@pytest.fixture
async def memory(sqlite_path, settings_for):
    engine = create_engine(f"sqlite+aiosqlite:///{sqlite_path}")
    memory = MemoryManager(engine, settings_for(sqlite_path))
    await memory.start(background=False)
    yield memory
    await memory.close()
    await engine.dispose()


@pytest.fixture
def settings_for(tmp_path):
    from bot.settings import Settings

    def make(path: Path) -> Settings:
        return Settings(  # type: ignore[call-arg]
            _env_file=None,
            database_url=f"sqlite+aiosqlite:///{path}",
            gemini_api_key=None,
            discord_token=None,
            embedding_model="none",
        )

    return make


async def test_batches_of_new_messages_are_indexed_once_and_counted(memory, sqlite_path):
    for i in range(2500):  # several batches, one of them partly filled
        await memory.intake.message(said(i, f"kiwi number {i} on the trail"), wait=True)
    await memory.flush()
    counts = memory.intake.stored_so_far()
    assert (counts.new, counts.known) == (2500, 0)
    assert index_differences(sqlite_path) == []
    hits = await memory.recollection.recall(GUILD, "kiwi trail", channel_id=CHANNEL, limit=5)
    assert hits, "the batch-indexed rows are found"


async def test_replays_edits_and_deletes_within_and_across_batches_keep_the_index_exact(memory, sqlite_path):
    for i in range(300):
        await memory.intake.message(said(i, f"first words {i}", user=i % 7))
    # Within one batch: the same message twice (a replay with a newer edit: the trigger path), an edit and a
    # delete of messages that arrived earlier in the same batch, and a replay that changes nothing.
    await memory.intake.message(said(300, "alpha before the edit", user=1))
    await memory.intake.message(said(300, "alpha after the edit", edited=301, user=1))
    await memory.intake.message(said(301, "bravo soon deleted"))
    await memory.intake.edit(said(0, "").message_id, "first words rewritten", T0 + timedelta(days=1))
    await memory.intake.delete([said(301, "").message_id, said(5, "").message_id])
    await memory.intake.message(said(7, "first words 7"))
    await memory.flush()
    # Across batches: replays of stored messages, one with a newer edit.
    for i in range(10, 20):
        await memory.intake.message(said(i, f"first words {i} edited", edited=1000 + i, user=i % 7))
    await memory.intake.message(said(21, "first words 21"))
    await memory.flush()
    counts = memory.intake.stored_so_far()
    # New: 0..300 but 5; known: 300's replay, 7, 10..19 and 21. 5 and 301, deleted in the batch that brought them,
    # are never written (a deleted message id is never stored again: db/tombstones.py).
    assert (counts.new, counts.known) == (300, 13)
    assert index_differences(sqlite_path) == []


async def test_other_writers_are_still_indexed_by_the_trigger(sqlite_path):
    engine = create_engine(f"sqlite+aiosqlite:///{sqlite_path}")
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO chat_history (message_id, guild_id, channel_id, user_id, message_text, timestamp,"
                    " kind) VALUES (1, 2, 3, 4, 'written by someone else', '2026-11-01 12:00:00.000000', 0)"
                )
            )
    finally:
        await engine.dispose()
    conn = sqlite3.connect(sqlite_path)
    assert conn.execute("SELECT rowid FROM chat_fts WHERE chat_fts MATCH 'someone'").fetchall() == [(1,)]
    conn.close()
    assert index_differences(sqlite_path) == []


async def test_a_refused_row_leaves_neither_the_switch_on_nor_the_index_wrong(memory, sqlite_path):
    for i in range(50):
        await memory.intake.message(said(i, f"before {i}"))
    # Past BIGINT: refused by the driver mid-batch, so the batch is halved until the row is alone.
    await memory.queue.put(IncomingMessage(GUILD, CHANNEL, 2**60 + 99, 2**64, "x", "poison", T0))
    for i in range(50, 100):
        await memory.intake.message(said(i, f"after {i}"))
    await memory.queue.put(MessageEdit(said(3, "").message_id, "before 3 changed", T0 + timedelta(days=2)))
    await memory.queue.put(MessageDelete((said(4, "").message_id,)))
    await memory.flush()
    counts = memory.intake.stored_so_far()
    assert (counts.new, counts.dead_letters) == (100, 1)
    assert index_differences(sqlite_path) == []
