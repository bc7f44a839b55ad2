"""Deletions win over every later write (both databases): what another process, a spill file or a late batch
still holds of a forgotten member, a deleted message, a purged channel, span or guild, or an opted-out member
is never stored after the deletion. "Another process" is a second MemoryManager with its own engine on the
same database; "a late write" is that process's batch writer, which is what its queue and its spill replay
both end in.
"""

from __future__ import annotations

import asyncio
import os
import stat
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text

from bot.memory.clock import FakeClock
from bot.memory.intake.queue import WriteBehindQueue
from bot.memory.manager import MemoryManager
from db import tombstones
from db.engine import create_engine
from db.messages import batch_writer_for
from db.models import ChatMessage, MemberName, ReplySource
from db.records import IncomingMessage, Kind, MessageDelete
from db.records import ReplySource as Source
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message, minutes

NOW = T0 + timedelta(hours=6)
BOT = 2**60 + 9


@pytest.fixture
async def two(db_url, settings):
    """Two processes on one database: `a` holds writes, `b` deletes."""
    managers, engines = [], []
    for _ in range(2):
        engine = create_engine(db_url)
        manager = MemoryManager(engine, settings, clock=FakeClock(NOW))
        await manager.start()
        managers.append(manager)
        engines.append(engine)
    yield managers
    for manager, engine in zip(managers, engines, strict=True):
        await manager.close()
        await engine.dispose()


async def late_write(manager: MemoryManager, ops) -> None:
    """What a process still held, written now (its queue's writer; the spill replay ends in it too)."""
    writer = batch_writer_for(manager.engine)
    try:
        await writer.write(ops)
    finally:
        await writer.close()


async def stored_ids(manager: MemoryManager) -> set[int]:
    async with manager.sessions() as session:
        return set((await session.scalars(select(ChatMessage.message_id))).all())


async def test_a_forgotten_members_held_messages_are_not_written_after_the_forget(two):
    a, b = two
    await b.intake.message(message("alice's first", at=T0))
    await b.flush()
    held = [message("alice's secret, still queued elsewhere", at=T0 + minutes(1)), message("bob's", author=BOB)]
    await b.admin.forget_member(GUILD, ALICE)
    later = message("alice, after the forget", at=NOW + minutes(1))
    await late_write(a, [*held, later])
    assert await stored_ids(a) == {held[1].message_id, later.message_id}
    async with a.sessions() as session:
        names = set((await session.scalars(select(MemberName.user_id).where(MemberName.guild_id == GUILD))).all())
    assert names == {ALICE, BOB}  # alice's name comes back only with what she said after
    older = message("alice, older still", at=T0 - minutes(5))
    await late_write(a, [older])
    assert older.message_id not in await stored_ids(a)


async def test_a_message_deleted_in_discord_is_not_stored_by_a_later_batch_or_the_same_one(two):
    a, b = two
    gone = message("deleted before it was written")
    await b.intake.delete([gone.message_id])  # the delete reaches storage first (another process)
    await b.flush()
    await late_write(a, [gone])
    assert gone.message_id not in await stored_ids(a)
    first = message("deleted in the same batch, before its insert")
    await late_write(a, [MessageDelete((first.message_id,)), first, message("kept")])
    assert first.message_id not in await stored_ids(a)
    assert len(await stored_ids(a)) == 1


@pytest.mark.parametrize("purge", ["channel", "before", "guild"])
async def test_a_purged_channel_span_or_guild_stays_purged(two, purge):
    a, b = two
    old = message("in the purged channel, old", at=T0)
    elsewhere = message("another channel, old", channel=CHANNEL + 1, at=T0)
    new = message("after the purge", at=NOW + minutes(1))
    if purge == "channel":
        await b.admin.purge_channel(GUILD, CHANNEL)
    elif purge == "before":
        await b.admin.purge_before(GUILD, T0 + minutes(30))
    else:
        await b.admin.purge_guild(GUILD)
    await late_write(a, [old, elsewhere, new])
    kept = await stored_ids(a)
    assert old.message_id not in kept and new.message_id in kept
    assert (elsewhere.message_id in kept) == (purge == "channel")


async def test_another_processs_opt_out_stops_this_processs_writes(two):
    a, b = two
    await b.admin.opt_out(GUILD, ALICE, delete_stored=False)
    assert not a.admin.opted_out(GUILD, ALICE)  # a has not heard of it yet
    held = message("alice after opting out")
    await late_write(a, [held, message("bob", author=BOB)])
    assert held.message_id not in await stored_ids(a)
    assert len(await stored_ids(a)) == 1


async def test_a_reply_built_on_a_forgotten_members_data_is_not_stored_late(two):
    a, b = two
    await b.admin.forget_member(GUILD, ALICE)
    reply = IncomingMessage(GUILD, CHANNEL, 2**60 + 777, BOT, "elefant", "alice said paella", T0, kind=Kind.BOT)
    quoting = IncomingMessage(GUILD, CHANNEL, 2**60 + 778, BOT, "elefant", "bob said hi", T0, kind=Kind.BOT)
    await late_write(
        a,
        [
            reply,
            Source(reply.message_id, GUILD, user_id=ALICE),
            quoting,
            Source(quoting.message_id, GUILD, user_id=BOB),
        ],
    )
    assert await stored_ids(a) == {quoting.message_id}
    async with a.sessions() as session:
        sources = (await session.scalars(select(ReplySource.reply_id))).all()
    assert list(sources) == [quoting.message_id]


async def test_a_spill_file_replayed_after_a_forget_brings_nothing_back(db_url, settings, tmp_path):
    engine = create_engine(db_url)
    held = [message(f"alice's line {i}", at=T0 + minutes(i)) for i in range(5)]
    try:
        async with engine.begin() as conn:  # storage away: the stop keeps what it holds in a spill file
            await conn.execute(text("ALTER TABLE chat_history RENAME TO chat_history_away"))
        queue = WriteBehindQueue(engine, flush_ms=5, shutdown_retry_seconds=0.2, spill_dir=tmp_path)
        for op in held:
            await queue.put(op)
        await queue.close()
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE chat_history_away RENAME TO chat_history"))
        [spilled] = tmp_path.glob("ingest-spill-*.jsonl")
        assert stat.S_IMODE(os.stat(spilled).st_mode) == 0o600  # what members said, readable by this user only
        purger = MemoryManager(engine, settings, clock=FakeClock(NOW))
        await purger.start()
        await purger.admin.forget_member(GUILD, ALICE)  # from a directory that never saw the spill file
        await purger.close()
        replay = WriteBehindQueue(engine, flush_ms=5, spill_dir=tmp_path)
        replay.start()
        await asyncio.wait_for(replay.flush(), timeout=30)
        await replay.close()
        assert replay.stats.recovered == len(held)
        async with engine.connect() as conn:
            assert await conn.scalar(select(func.count()).select_from(ChatMessage)) == 0
        assert not list(tmp_path.glob("ingest-spill-*.jsonl"))
    finally:
        await engine.dispose()


async def test_forget_waits_for_a_batch_under_way_on_postgresql(two, db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: a batch and a deletion cannot overlap")
    a, b = two
    async with a.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        async with raw.transaction():  # a batch of alice's messages, between its tombstone check and its commit
            for function, (key, value) in tombstones.writer_locks([GUILD], deletes=False):
                await raw.execute(f"SELECT {function}($1, $2)", key, value)
            forget = asyncio.ensure_future(b.admin.forget_member(GUILD, ALICE))
            await asyncio.sleep(0.5)
            assert not forget.done()  # it must not delete before the batch commits: it would miss its rows
            await raw.execute(
                "INSERT INTO chat_history (message_id, guild_id, channel_id, user_id, message_text, timestamp, kind) "
                "VALUES ($1, $2, $3, $4, 'in flight', $5, 0)",
                2**60 + 555,
                GUILD,
                CHANNEL,
                ALICE,
                T0,
            )
        await asyncio.wait_for(forget, timeout=30)
    assert await stored_ids(a) == set()  # the forget saw the batch's row and deleted it
