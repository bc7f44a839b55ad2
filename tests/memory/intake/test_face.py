"""The intake face (both databases): what it admits is what storage admits, and what chat sees of the room (the
window, `Directory.channel_lines`) is no more — a reply built on an opted-out member's words, what a member said while
opted out, a forgotten member's mentions, what retention keeps no longer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from db.deletion import FORMER
from db.models import ChatMessage
from db.records import IncomingMessage, Kind
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message, minutes

NOW = T0 + timedelta(hours=6)
BOT = 2**60 + 9


@pytest.fixture
async def memory(engine, settings):
    memory = MemoryManager(engine, settings.model_copy(update={"retention_days": 2}), clock=FakeClock(NOW))
    await memory.start()
    yield memory
    await memory.close()


def room(memory: MemoryManager) -> list[str]:
    """What a chat reply in the channel sees of it."""
    return [line.content for line in memory.directory.channel_lines(GUILD, CHANNEL, budget_tokens=10_000)]


async def stored_texts(memory: MemoryManager) -> dict[int, str]:
    await memory.flush()
    async with memory.sessions() as session:
        return dict((await session.execute(select(ChatMessage.message_id, ChatMessage.message_text))).all())


async def test_a_reply_built_on_an_opted_out_members_words_stays_out_of_the_room(memory):
    await memory.intake.message(message("bob: the lock code is 7301", author=BOB, name="bob", at=NOW))
    await memory.admin.opt_out(GUILD, BOB, delete_stored=False)
    reply = IncomingMessage(GUILD, CHANNEL, 2**60 + 777, BOT, "elefant", "bob said 7301", NOW, kind=Kind.BOT)
    assert not await memory.intake.reply(reply, members=[BOB])
    other = IncomingMessage(GUILD, CHANNEL, 2**60 + 778, BOT, "elefant", "alice said hi", NOW, kind=Kind.BOT)
    assert await memory.intake.reply(other, members=[ALICE])
    assert "bob said 7301" not in room(memory)
    assert "alice said hi" in room(memory)
    assert reply.message_id not in await stored_texts(memory)


async def test_what_a_member_said_while_opted_out_stays_out_after_they_opt_back_in(memory):
    await memory.admin.opt_out(GUILD, ALICE, delete_stored=False)
    memory.clock.advance(minutes=10)
    await memory.admin.opt_in(GUILD, ALICE)
    during = message("said while opted out", at=NOW + minutes(5))  # a catch-up, an import, a late delivery
    before, after = message("said before", at=NOW - minutes(5)), message("said after", at=NOW + minutes(15))
    assert not await memory.intake.message(during)
    assert await memory.intake.message(before) and await memory.intake.message(after)
    assert room(memory) == ["said before", "said after"]
    assert set(await stored_texts(memory)) == {before.message_id, after.message_id}


async def test_others_lines_said_before_a_forget_me_reach_the_room_without_her(memory):
    await memory.admin.forget_member(GUILD, ALICE)
    earlier = message(f"ask <@{ALICE}> or <@!{ALICE}>", author=BOB, name="bob", at=NOW - minutes(5))
    later = message(f"welcome back <@{ALICE}>", author=BOB, name="bob", at=NOW + minutes(5))
    assert not await memory.intake.message(message("hers, said before", at=NOW - minutes(1)))
    assert await memory.intake.message(earlier) and await memory.intake.message(later)
    # Said before it: as the forget-me rewrote what was stored then. Said after: what people say now.
    assert room(memory) == [f"ask {FORMER} or {FORMER}", f"welcome back <@{ALICE}>"]
    assert sorted((await stored_texts(memory)).values()) == sorted(room(memory))


async def test_what_retention_keeps_no_longer_is_not_taken(memory):
    old = message("three days ago", at=NOW - timedelta(days=3))
    recent = message("yesterday", at=NOW - timedelta(days=1))
    assert not await memory.intake.message(old)  # RETENTION_DAYS=2
    assert await memory.intake.message(recent)
    assert room(memory) == ["yesterday"]
    assert set(await stored_texts(memory)) == {recent.message_id}
