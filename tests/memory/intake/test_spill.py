"""Spill files on both databases: a full queue overflows to disk without waiting and catches up in order;
what a stop could not store is replayed by the next start on the same database, and only there."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.memory.intake.queue import WriteBehindQueue
from bot.memory.intake.spill import decode, encode
from db.ingest_rows import DeadLetter
from db.models import ChatMessage
from db.records import Kind, MessageDelete, MessageEdit, MessageKind, MessageVector, ReplySource
from tests.factories import T0, message, minutes
from tests.steps import at_once


async def texts(engine: AsyncEngine) -> dict[int, str]:
    async with engine.connect() as conn:
        return dict((await conn.execute(select(ChatMessage.message_id, ChatMessage.message_text))).all())


async def table_away(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("ALTER TABLE chat_history RENAME TO chat_history_away"))


async def table_back(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("ALTER TABLE chat_history_away RENAME TO chat_history"))


def spill_files(directory) -> list:
    return sorted(directory.glob("ingest-spill-*.jsonl")) if directory.exists() else []


def test_every_kind_of_operation_survives_the_file_format():
    plain = message("plain", reply_to=2**60 + 5)
    ops = [
        plain,
        replace(
            plain,
            content="Elefant, remember that \u00e9 \U0001f418",
            kind=Kind.ADDRESSED,
            mentioned_user_ids=(2**60 + 7,),
            edited_at=T0 + minutes(3),
            author_username="al",
        ),
        MessageEdit(2**60 + 9, "new text \u2603", T0 + timedelta(seconds=1)),
        MessageDelete((2**60 + 1, 2**60 + 2)),
        MessageKind(2**60 + 3, Kind.ADDRESSED),
        ReplySource(2**60 + 4, 2**60 + 1, user_id=2**60 + 8),
        DeadLetter(message("refused"), "IntegrityError: no"),
        MessageVector(2**60 + 10, 2**60 + 1, "model", bytes([1, 255, 0]), 0.25, "what was embedded \u2603"),
    ]
    for op in ops:
        line = encode(op)
        assert "\n" not in line
        assert decode(line) == op
    older = json.loads(encode(ops[-1]))  # a vector spilled before vectors carried their text: any text
    del older["text"]
    assert decode(json.dumps(older)) == replace(ops[-1], text=None)


async def test_a_full_queue_never_waits_while_storage_is_down_and_catches_up_in_order(engine, tmp_path):
    spill = tmp_path / "spill"
    queue = WriteBehindQueue(engine, batch_rows=10, flush_ms=5, max_queue=20, spill_dir=spill)
    queue.start()
    await table_away(engine)
    msgs = [message(f"m{i}") for i in range(300)]
    for i, m in enumerate(msgs):
        at_once(queue.put(m))
        if i == 150:  # operations on disk must land after what they follow: edit, delete, re-kind
            at_once(queue.put(MessageEdit(msgs[0].message_id, "m0 edited", T0 + minutes(1))))
            at_once(queue.put(MessageDelete((msgs[1].message_id,))))
    for _ in range(1500):  # the overflow reaches the disk in batches, while storage is still away (30 s: a guard)
        if spill_files(spill) and queue.stats.failed_attempts:
            break
        await asyncio.sleep(0.02)
    assert queue.stats.overflowed > 250 and spill_files(spill)
    flushed = asyncio.ensure_future(queue.flush())
    await asyncio.sleep(0.2)
    assert not flushed.done()  # a flush waits for what overflowed before it, too
    await table_back(engine)
    await asyncio.wait_for(flushed, 30)
    stored = await texts(engine)
    assert set(stored) == {m.message_id for m in msgs} - {msgs[1].message_id}
    assert stored[msgs[0].message_id] == "m0 edited"
    await queue.close()
    assert spill_files(spill) == []  # removed once written
    assert queue.stats.spilled == 0 and queue.stats.written == 300 + 2


async def test_what_a_stop_could_not_store_is_replayed_by_the_next_start_on_the_same_database(engine, tmp_path, caplog):
    spill = tmp_path / "spill"
    first = WriteBehindQueue(engine, flush_ms=5, max_queue=5, shutdown_retry_seconds=0.3, spill_dir=spill)
    await table_away(engine)
    msgs = [message(f"kept {i}") for i in range(40)]
    for m in msgs:
        await first.put(m)
    await first.put(MessageEdit(msgs[3].message_id, "kept 3, edited", T0 + minutes(1)))
    await asyncio.wait_for(first.close(), 60)  # waited its 0.3 s for storage, then kept the rest (not for ever)
    assert first.stats.spilled == 41
    files = spill_files(spill)
    assert len(files) == 1
    assert sum(1 for _ in files[0].open()) == 1 + 41  # header, then every operation once
    assert "could not be stored" in caplog.text and str(files[0]) in caplog.text
    await table_back(engine)

    second = WriteBehindQueue(engine, flush_ms=5, spill_dir=spill)
    second.start()
    assert second.stats.recovered == 41
    await second.put(MessageDelete((msgs[0].message_id,)))  # arrives after the replay: applies after it
    await asyncio.wait_for(second.flush(), 30)
    await second.close()
    stored = await texts(engine)
    assert set(stored) == {m.message_id for m in msgs[1:]}
    assert stored[msgs[3].message_id] == "kept 3, edited"
    assert spill_files(spill) == []


async def test_spill_files_of_another_database_or_still_in_use_are_left_alone(engine, tmp_path):
    spill = tmp_path / "spill"
    spill.mkdir()
    foreign = spill / "ingest-spill-1-1.jsonl"
    foreign.write_text(
        json.dumps({"elefant_spill": 1, "database": "sqlite:/somewhere/else.db"}) + "\n" + encode(message("x")) + "\n"
    )
    busy = WriteBehindQueue(engine, flush_ms=5, max_queue=1, spill_dir=spill)
    busy.start()
    await table_away(engine)
    for i in range(20):
        await busy.put(message(f"busy {i}"))
    while len(spill_files(spill)) < 2:  # noqa: ASYNC110 - waiting for the overflow file to be written
        await asyncio.sleep(0.01)
    newcomer = WriteBehindQueue(engine, spill_dir=spill)
    newcomer.start()  # another process on the same database, while the first one still owns its overflow
    assert newcomer.stats.recovered == 0
    await newcomer.close()
    await table_back(engine)
    await asyncio.wait_for(busy.flush(), 30)
    await busy.close()
    assert len(await texts(engine)) == 20
    assert spill_files(spill) == [foreign]
