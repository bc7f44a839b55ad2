"""The ingest batch writer (db/messages.py) among other processes: one order of rows for every batch, every guild
whose rows a batch writes locked against deletions (vectors too), and a batch held up by a process frozen inside
its transaction written a few seconds later instead of when that process wakes."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import select, text

from bot.memory.intake.queue import WriteBehindQueue
from db import changes
from db import engine as engines
from db.engine import create_engine, create_session_factory
from db.messages import BatchWriter, batch_writer_for
from db.models import MessageVector as VectorRow
from db.records import MessageEdit, MessageVector
from tests.factories import ALICE, BOB, GUILD, T0, message

CAROL = ALICE + 2


def vector(message_id: int) -> MessageVector:
    return MessageVector(message_id, GUILD, "test-model", b"\x00" * 8, 1.0, None)


async def test_names_are_written_once_a_batch_in_key_order_whatever_came_between(engine):
    writer = BatchWriter(engine.dialect)
    ids = iter(range(2**60 + 50, 2**60 + 60))
    said = [
        message("b", author=BOB, name="bob", message_id=next(ids)),
        message("c", author=CAROL, name="carol", message_id=next(ids)),
    ]
    then = [message("a", author=ALICE, name="alice", message_id=next(ids))]
    batch = [*said, vector(said[0].message_id), MessageEdit(said[1].message_id, "c!", T0), *then, vector(2**60 + 1)]
    statements = writer.prepare(batch)
    names = [rows for sql, rows in statements if "member_names" in sql]
    assert len(names) == 1  # one statement: two would take bob's and carol's rows, then alice's
    assert [row[1] for row in names[0]] == sorted([ALICE, BOB, CAROL])
    [messages] = [rows for sql, rows in statements if sql.lstrip().startswith("INSERT INTO chat_history")]
    assert [row[0] for row in messages] == sorted(row[0] for row in messages)
    [vectors] = [rows for sql, rows in statements if "message_vectors" in sql]
    assert [row[0] for row in vectors] == sorted(row[0] for row in vectors)
    await batch_writer_for(engine).close()


@pytest.fixture
async def pg(db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: a batch and a deletion cannot overlap")
    engine = create_engine(db_url)
    yield engine
    await engine.dispose()


async def test_a_batch_of_vectors_alone_waits_for_a_deletion_of_its_guild(pg):
    said = message("the pear tree", message_id=2**60 + 70)
    writer = batch_writer_for(pg)
    await writer.write([said])
    async with create_session_factory(pg)() as deleting, deleting.begin():
        await changes.lock_guild(deleting, GUILD)  # a forget-me under way, about to delete the message
        storing = asyncio.ensure_future(writer.write([vector(said.message_id)]))
        await asyncio.sleep(0.5)
        assert not storing.done()  # it would lock the message's row against the deletion: a deadlock
        await deleting.execute(text("DELETE FROM chat_history WHERE message_id = :m"), {"m": said.message_id})
    await asyncio.wait_for(storing, 10)
    async with create_session_factory(pg)() as session:
        assert (await session.scalars(select(VectorRow.message_id))).all() == []  # its message had gone meanwhile


async def test_a_process_frozen_inside_its_transaction_delays_others_by_seconds(db_url, monkeypatch, caplog, tmp_path):
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer, which a frozen process holds until it goes (bot/memory/intake)")
    # The engine's own bounds, shortened: a lock wait runs out at 0.5 s, a transaction idle for 2 s is ended.
    monkeypatch.setattr(
        engines, "PG_SERVER_SETTINGS", {"lock_timeout": "500ms", "idle_in_transaction_session_timeout": "2s"}
    )
    frozen, live = create_engine(db_url), create_engine(db_url)
    try:
        conn = await frozen.connect()
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        transaction = raw.transaction()
        await transaction.start()  # a batch that upserted alice's name, then its process was stopped (SIGSTOP)
        await raw.execute(
            "INSERT INTO member_names (guild_id, user_id, display_name, updated_at) VALUES ($1, $2, 'alice', $3)",
            GUILD,
            ALICE,
            T0,
        )
        queue = WriteBehindQueue(live, flush_ms=5, spill_dir=tmp_path)
        queue.start()
        caplog.set_level(logging.INFO)
        await queue.put(message("while the other one sleeps", author=ALICE))
        await asyncio.wait_for(queue.flush(), 30)  # without the bounds: as long as the frozen one sleeps
        await queue.close()
        assert queue.stats.busy_retries >= 1  # its lock wait ran out, and the batch ran again
        assert "storage down" not in caplog.text  # a busy moment, not storage away
        with pytest.raises(Exception):  # noqa: B017 - the server ended the frozen session: its locks went with it
            await transaction.commit()
        await conn.invalidate()
    finally:
        await frozen.dispose()
        await live.dispose()
