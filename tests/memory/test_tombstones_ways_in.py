"""What every way into storage admits (both databases), besides deletions (test_tombstones.py): what a member said while
opted out, once they have opted back in; a forgotten member's mentions in what others said before her forget-me,
edits and dead letters included; what retention keeps no longer. "Another process" and "a late write" are as in
test_tombstones.py; a spill file is replayed by a process with its own DATA_DIR and its own settings.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import timedelta

from sqlalchemy import func, select, text

from bot.memory.clock import FakeClock
from bot.memory.intake.queue import WriteBehindQueue
from bot.memory.manager import MemoryManager
from db.deletion import FORMER
from db.engine import create_engine
from db.ingest_rows import DeadLetter as Refused
from db.models import ChatMessage, DeadLetter, OptOutSpan
from db.records import MessageEdit
from tests.factories import ALICE, BOB, GUILD, T0, message, minutes
from tests.memory.test_tombstones import NOW, late_write, stored_ids, two
from tests.residue import forgotten_in_clear

__all__ = ["two"]  # the fixture, shared with test_tombstones.py


async def texts(manager: MemoryManager) -> dict[int, str]:
    async with manager.sessions() as session:
        return dict((await session.execute(select(ChatMessage.message_id, ChatMessage.message_text))).all())


async def payloads(manager: MemoryManager) -> list[dict[str, object]]:
    async with manager.sessions() as session:
        return [json.loads(p) for p in await session.scalars(select(DeadLetter.payload))]


def bobs(content: str, at=NOW, **fields):
    return dataclasses.replace(message(content, author=BOB, name="bob", at=at), **fields)


async def test_what_was_said_while_opted_out_is_not_written_late_once_they_opt_back_in(two):
    a, b = two
    await b.admin.opt_out(GUILD, ALICE, delete_stored=False)
    b.clock.advance(minutes=10)
    await b.admin.opt_in(GUILD, ALICE)
    during = message("said while opted out", at=NOW + minutes(5))
    before, after = message("said before", at=NOW - minutes(5)), message("said after", at=NOW + minutes(15))
    await late_write(a, [during, before, after, Refused(dataclasses.replace(during, reply_to_id=2**63), "reply id")])
    assert await stored_ids(a) == {before.message_id, after.message_id}
    assert await payloads(a) == []  # not even kept as a dead letter
    await a.changes.feed.catch_up()  # a follows b's opt-in: it takes nothing of the span either
    assert not a.admin.opted_out(GUILD, ALICE)
    assert not await a.intake.message(message("said while opted out, delivered again", at=NOW + minutes(6)))


async def test_a_forgotten_members_mentions_are_rewritten_in_what_others_said_before_and_is_written_late(two):
    a, b = two
    stored_before = bobs("plain words", at=NOW - minutes(30))
    await b.intake.message(stored_before)
    await b.flush()
    await b.admin.forget_member(GUILD, ALICE)
    said_before = bobs(f"ask <@{ALICE}>, or <@!{ALICE}>", at=NOW - minutes(1), mentioned_user_ids=(ALICE,))
    said_after = bobs(f"welcome back <@{ALICE}>", at=NOW + minutes(1))
    brought = bobs("with its edit in the same batch", at=NOW - minutes(3))
    refused = bobs(f"<@{ALICE}> said so", at=NOW - minutes(2), reply_to_id=2**63, mentioned_user_ids=(ALICE, BOB))
    await late_write(
        a,
        [
            said_before,
            said_after,
            brought,
            MessageEdit(brought.message_id, f"edited: <@{ALICE}>", NOW - minutes(2)),
            MessageEdit(stored_before.message_id, f"thanks <@{ALICE}>", NOW - minutes(1)),
            Refused(refused, "reply id"),
        ],
    )
    stored = await texts(a)
    assert stored[said_before.message_id] == f"ask {FORMER}, or {FORMER}"
    assert stored[brought.message_id] == f"edited: {FORMER}"
    assert stored[stored_before.message_id] == f"thanks {FORMER}"
    assert stored[said_after.message_id] == f"welcome back <@{ALICE}>"  # said after her forget-me: new
    [dead] = await payloads(a)
    assert dead["content"] == f"{FORMER} said so" and dead["mentioned_user_ids"] == [BOB]
    assert await forgotten_in_clear(a.engine, ALICE, said_until=NOW) == []


async def test_a_forget_me_rewrites_her_mentions_in_others_dead_letters(two):
    _, b = two
    for at in (NOW - minutes(5), NOW + minutes(5)):  # a dead letter of any time: kept for a look, never said again
        await b.intake.message(bobs(f"<@{ALICE}> said so", at=at, reply_to_id=2**63, mentioned_user_ids=(ALICE,)))
    await b.flush()
    assert len(await forgotten_in_clear(b.engine, ALICE, said_until=NOW)) == 2
    counts = await b.admin.forget_member(GUILD, ALICE)
    assert counts["mentions_removed"] == 2
    assert [p["content"] for p in await payloads(b)] == [f"{FORMER} said so"] * 2
    assert await forgotten_in_clear(b.engine, ALICE, said_until=NOW) == []


async def test_a_spill_file_replayed_by_another_process_admits_only_what_the_others_do(db_url, settings, tmp_path):
    """Held in a spill file while storage was away: a mention of alice said before her forget-me, what bob said while
    he was opted out, something older than retention. Another process (its own DATA_DIR) forgets alice and opts bob
    out and back in meanwhile; the process that replays the file keeps RETENTION_DAYS=2."""
    engine = create_engine(db_url)
    mention = bobs(f"ask <@{ALICE}>", at=NOW - minutes(60))
    during = bobs("said while opted out", at=NOW + minutes(5))
    old = bobs("three days ago", at=NOW - timedelta(days=3))
    kept = bobs("said after opting in", at=NOW + minutes(15))
    try:
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE chat_history RENAME TO chat_history_away"))
        queue = WriteBehindQueue(engine, flush_ms=5, shutdown_retry_seconds=0.2, spill_dir=tmp_path)
        for op in (mention, during, old, kept):
            await queue.put(op)
        await queue.close()
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE chat_history_away RENAME TO chat_history"))
        elsewhere = settings.model_copy(update={"data_dir": tmp_path / "elsewhere"})
        other = MemoryManager(engine, elsewhere, clock=FakeClock(NOW))
        await other.start()
        await other.admin.forget_member(GUILD, ALICE)
        await other.admin.opt_out(GUILD, BOB, delete_stored=False)
        other.clock.advance(minutes=10)
        await other.admin.opt_in(GUILD, BOB)
        await other.close()
        replaying = settings.model_copy(update={"data_dir": tmp_path, "retention_days": 2})
        replay = MemoryManager(engine, replaying, clock=FakeClock(NOW + minutes(20)))
        await replay.start()  # leftovers first
        await asyncio.wait_for(replay.flush(), timeout=30)
        assert replay.queue.stats.recovered == 4
        assert await texts(replay) == {mention.message_id: f"ask {FORMER}", kept.message_id: kept.content}
        await replay.close()
    finally:
        await engine.dispose()


async def test_a_batch_of_another_process_keeps_to_this_ones_retention(db_url, settings):
    """The writer asks where retention begins at each batch, on the clock of the process that writes."""
    engine = create_engine(db_url)
    clock = FakeClock(T0)
    memory = MemoryManager(engine, settings.model_copy(update={"retention_days": 1}), clock=clock)
    await memory.start()
    try:
        first = message("a day and an hour before the batch", at=T0 - timedelta(hours=25))
        await memory.queue.put(first)  # the queue's own writer, as a spill replay or a held batch reaches it
        await memory.flush()
        assert await stored_ids(memory) == set()
        clock.advance(hours=-2)  # the same message, two hours earlier, is within the day retention keeps
        await memory.queue.put(first)
        await memory.flush()
        assert await stored_ids(memory) == {first.message_id}
    finally:
        await memory.close()
        await engine.dispose()


async def test_retention_drops_the_opt_out_spans_it_makes_needless(engine, settings):
    memory = MemoryManager(engine, settings.model_copy(update={"retention_days": 2}), clock=FakeClock(NOW))
    await memory.start()
    try:
        for member, back in ((ALICE, 4), (BOB, 1)):  # a span ended 4 days ago, and one ended yesterday
            memory.clock.advance(days=-back)
            await memory.admin.opt_out(GUILD, member, delete_stored=False)
            memory.clock.advance(minutes=10)
            await memory.admin.opt_in(GUILD, member)
            memory.clock.advance(days=back, minutes=-10)
        async with memory.sessions() as session:
            assert await session.scalar(select(func.count()).select_from(OptOutSpan)) == 2
        await memory.admin.apply_retention()
        async with memory.sessions() as session:
            ends = list(await session.scalars(select(OptOutSpan.until)))
        assert ends == [NOW - timedelta(days=1) + minutes(10)]
    finally:
        await memory.close()
