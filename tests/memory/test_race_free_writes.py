"""Several processes seeing the same new things at once (both databases): every "create if missing" is one
statement, so none of them fails, and a batch whose channel rule the database refuses waits and retries
instead of being sent to a spill file that only a later start would read."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from bot.memory.clock import FakeClock
from bot.memory.intake.channels import ChannelScopes
from bot.memory.intake.queue import WriteBehindQueue
from db import members, names
from db.engine import create_engine, create_session_factory
from db.messages import BatchWriter
from db.models import ChannelPrivacy, ChatMessage
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message, minutes

PROCESSES = 4


@pytest.fixture
async def engines(db_url):
    made = [create_engine(db_url) for _ in range(PROCESSES)]
    yield made
    for engine in made:
        await engine.dispose()


async def test_processes_seeing_a_new_channel_at_once_all_store_its_rule(engines):
    scopes = [ChannelScopes(create_session_factory(e), FakeClock(T0)) for e in engines]
    for scope in scopes:
        await scope.observe(GUILD, CHANNEL, is_private=True)
        await scope.observe(GUILD, CHANNEL + 1, is_private=False)
    await asyncio.gather(*(scope.save_pending() for scope in scopes))  # raised IntegrityError on a select-insert
    async with create_session_factory(engines[0])() as session:
        rows = (await session.execute(select(ChannelPrivacy.channel_id, ChannelPrivacy.is_private))).all()
    assert sorted(rows) == [(CHANNEL, True), (CHANNEL + 1, False)]


async def test_an_observation_never_undoes_an_admins_choice_made_in_another_process(engines):
    admin, listener = (ChannelScopes(create_session_factory(e), FakeClock(T0)) for e in engines[:2])
    await listener.observe(GUILD, CHANNEL, is_private=True)  # seen before the admin's choice, written after
    await admin.set_mode(GUILD, CHANNEL, "include")
    await listener.save_pending()
    await listener.load()
    assert listener.shared(GUILD, CHANNEL)


async def test_opt_outs_time_zones_and_names_written_at_once_by_several_processes(engines):
    async def one(engine, i):
        async with create_session_factory(engine)() as session, session.begin():
            await members.opt_out(session, GUILD, ALICE, at=T0)
            await members.set_zone(session, GUILD, "Europe/Paris", at=T0)
            await names.store(session, GUILD, BOB, f"bob {i}", None, at=T0 + minutes(i))

    await asyncio.gather(*(one(engine, i) for i, engine in enumerate(engines)))
    async with create_session_factory(engines[0])() as session:
        assert await members.optouts(session) == {(GUILD, ALICE)}
        assert await members.zones(session) == {GUILD: "Europe/Paris"}
        assert await names.display_names(session, GUILD, {BOB}) == {BOB: f"bob {PROCESSES - 1}"}  # the newest


async def test_a_refused_channel_rule_holds_its_batch_back_instead_of_spilling_it(engines, tmp_path):
    refusals = 2

    async def rules_first() -> None:
        nonlocal refusals
        if refusals:
            refusals -= 1
            raise IntegrityError("INSERT INTO channel_privacy", {}, Exception("duplicate key"))

    queue = WriteBehindQueue(engines[0], flush_ms=5, spill_dir=tmp_path, before_write=rules_first)
    sent = [message(f"m{i}") for i in range(10)]
    for op in sent:
        await queue.put(op)
    await asyncio.wait_for(queue.flush(), timeout=30)
    await queue.close()
    assert queue.stats.spilled == 0 and not list(tmp_path.glob("ingest-spill-*.jsonl"))
    async with create_session_factory(engines[0])() as session:
        assert len((await session.scalars(select(ChatMessage.message_id))).all()) == len(sent)


def test_batches_write_rows_in_key_order_so_processes_cannot_deadlock(engines):
    writer = BatchWriter(engines[0].dialect)
    ops = [message("b", author=BOB, message_id=2**60 + 3), message("a", author=ALICE, message_id=2**60 + 2)]
    [(_, rows), (_, name_rows)] = writer.prepare([*ops, message("a2", message_id=2**60 + 1)])
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    assert [row[:2] for row in name_rows] == sorted(row[:2] for row in name_rows)
