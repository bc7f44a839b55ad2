"""Spans intake, recall, embedding, summaries, the chat window and deletion on purpose: a question to the bot is
followed through every reader, because "the bot's conversation is not evidence" must hold in all of them at once.

Alice said she adopted a kitten; the next day she asked the bot about it, and the bot answered. Bob then asks
about alice's pet: recall must give him what alice said, never her question or the bot's answer; yesterday's
summary holds what people said to each other; the question has no vector, is in the channel's window (the
conversation needs its own turns) and goes with alice when she is forgotten.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.memory.assembly import Asked
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage, Kind
from bot.reply.routing import address, stored_kind
from db.models import ChatMessage, MessageVector
from fakes.models import model_stack
from tests.factories import ALICE, BOB, CHANNEL, GUILD, message
from tests.scope_probe import SameVector

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
BOT = 2**60 + 1
ASKED = "Elefant, what did I say about my new pet kitten?"


def said(text: str, *, author: int = ALICE, name: str = "alice", days: float = 0) -> IncomingMessage:
    """A message as every front end stores it: its kind decided by whether it is addressed to the bot."""
    m = message(text, author=author, name=name, at=NOW - timedelta(days=days))
    addressed = address(text, bot_user_id=BOT, bot_name="Elefant", replied_to_bot=False)
    return replace(m, kind=stored_kind(addressed))


@pytest.fixture
async def memory(engine, settings):
    # Every text means the same to this embedder: were the question embedded, it would be a candidate of every
    # question's nearest messages.
    settings = settings.model_copy(update={"memory_wait_seconds": 600})
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW), embedder=SameVector())
    await memory.start()
    memory.directory.note_name(GUILD, ALICE, "alice")
    memory.directory.note_name(GUILD, BOB, "bob")
    yield memory
    await memory.close()


async def test_a_question_to_the_bot_is_never_evidence_but_stays_in_the_conversation(memory):
    kitten = said("I adopted a kitten named Pixel", days=2)
    asked = said(ASKED, days=1)
    shop = said("the pet shop opens at nine", author=BOB, name="bob", days=1 - 1 / 24)
    for m in (kitten, asked, shop):
        await memory.intake.message(m)
    answer = message("alice said: I adopted a kitten named Pixel", author=BOT, name="Elefant", at=asked.created_at)
    await memory.intake.reply(answer, members=[ALICE], messages=[kitten.message_id])
    await memory.flush()
    assert asked.kind is Kind.ADDRESSED and kitten.kind is shop.kind is Kind.SPEECH
    assert memory.embedding is not None
    await memory.embedding.idle()
    await memory.flush()
    assert await memory.recollection.vectors_ready(GUILD)

    # Not a recall candidate of another member's question: not by its words, its vector or as a neighbour turn.
    bobs = "what did alice say about her new pet kitten?"
    hits = await memory.recollection.recall(GUILD, bobs, channel_id=CHANNEL, limit=50)
    assert kitten.message_id in {h.message_id for h in hits}
    assert {h.message_id for h in hits}.isdisjoint({asked.message_id, answer.message_id})
    remembered = await memory.recollection.for_reply(Asked(GUILD, BOB, bobs, channel_id=CHANNEL))
    received, recalled = remembered.text or "", remembered.recalled
    assert "I adopted a kitten named Pixel" in received
    assert "what did I say" not in received and "alice said:" not in received
    assert {t.message_id for s in recalled.snippets for t in s.turns}.isdisjoint({asked.message_id, answer.message_id})

    # No summary material: yesterday's summary holds what bob said to people, nothing alice said to the bot.
    assert memory.summaries is not None
    yesterday = await memory.summaries.past_day(GUILD, asked.created_at.date())
    assert "the pet shop opens at nine" in yesterday[BOB]
    assert not any("what did I say" in summary for summary in yesterday.values())

    # Never embedded: only what people said to each other has a vector.
    async with memory.sessions() as session:
        embedded = set((await session.scalars(select(MessageVector.message_id))).all())
    assert embedded == {kitten.message_id, shop.message_id}

    # The conversation still has its own turns, and alice's question goes with her.
    lines = memory.directory.channel_lines(GUILD, CHANNEL, budget_tokens=2000)
    assert ASKED in [line.content for line in lines]
    await memory.admin.forget_member(GUILD, ALICE)
    async with memory.sessions() as session:
        left = set((await session.scalars(select(ChatMessage.message_id))).all())
    assert left == {shop.message_id}
    assert ASKED not in [line.content for line in memory.directory.channel_lines(GUILD, CHANNEL, budget_tokens=2000)]
