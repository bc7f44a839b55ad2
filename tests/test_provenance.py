"""Spans recall, the responder and intake on purpose: a stored reply's provenance is what the model was shown.

Many messages match the question, more than the recall budget holds. The reply's sources (`reply_sources`) must be
the messages whose words reached the model's prompt, and nothing prepared that did not fit: a source is what makes
a deletion take the reply with it, so a source the model never saw deletes a reply for words it was never built on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.llm.client import LLM
from bot.llm.offline import OfflineProvider
from bot.llm.prompts import load_prompts
from bot.llm.recording import RecordingProvider
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.reply.model_turns import ModelTurns
from bot.reply.respond import Responder
from bot.reply.routing import Request, Route
from db.models import ChatMessage, ReplySource
from tests.factories import ALICE, BOB, CHANNEL, GUILD, message

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
BOT = 2**60 + 1
CAROL = 2**60 + 1003


@pytest.fixture
async def recorder():
    return RecordingProvider(OfflineProvider())


@pytest.fixture
async def memory(engine, settings, recorder):
    settings = settings.model_copy(update={"memory_wait_seconds": 600, "recall_token_budget": 300})
    llm = LLM(None, prompts=load_prompts(), offline=recorder)
    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOW))
    memory.turns = ModelTurns(llm, memory.directory, settings)
    await memory.start()
    people = ((ALICE, "alice"), (BOB, "bob"), (CAROL, "carol"))
    for day in range(40):
        author, name = people[day % 3]
        at = NOW - timedelta(days=40 - day)
        await memory.intake.message(
            message(f"the kayak trip number {day} went down the river past the mill", author=author, name=name, at=at)
        )
        await memory.intake.message(message(f"lunch was soup on day {day}", author=BOB, name="bob", at=at))
    await memory.flush()
    yield memory
    await memory.close()


async def test_a_replys_sources_are_the_messages_its_prompt_showed(memory, recorder):
    turns = memory.turns
    responder = Responder(
        memory.facts,
        memory.recollection,
        memory.directory,
        router=turns.route,
        chatter=turns.chat,
        policy="anyone",
        recall_chatter=turns.chat,
    )
    recorder.calls.clear()
    request = Request(GUILD, ALICE, "when did we go on the kayak trips down the river?", channel_id=CHANNEL)
    answer = await responder.respond(request)
    assert answer.route is Route.RECALL
    sent = recorder.last("chat")
    assert sent is not None
    reply = message(answer.text, author=BOT, name="Elefant", at=NOW)
    assert await memory.intake.reply(reply, members=answer.members, messages=answer.quoted)
    await memory.flush()
    async with memory.sessions() as session:
        sources = set(
            await session.scalars(
                select(ReplySource.message_id).where(
                    ReplySource.reply_id == reply.message_id, ReplySource.message_id.is_not(None)
                )
            )
        )
        shown = {
            m: body
            for m, body in await session.execute(
                select(ChatMessage.message_id, ChatMessage.message_text).where(ChatMessage.message_id.in_(sources))
            )
        }
    assert sources, "the reply was built on recalled messages"
    unseen = {m: body for m, body in shown.items() if body not in sent.prompt.user}
    assert unseen == {}, "sources the model was never shown"
    assert len(sources) < 40, "the budget holds fewer than every matching message: some were prepared, not shown"
