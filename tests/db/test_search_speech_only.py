"""The bot's conversation is kept out of everything recall searches (migration 0014), on both databases.

A question addressed to the bot and the bot's reply each carry a marker word that members' speech does not. No
recall query may return them, and none may scan them either: the full-text index (SQLite's FTS5 table,
PostgreSQL's tsvector column and its GIN index) holds no entry for them, so a search's cost follows members'
speech alone. What still needs the conversation finds it: "forget that …" rewrites the bot's reply that said it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from db.records import IncomingMessage, Kind, MessageKind
from db.search.messages import search_messages
from db.search.types import Search
from fakes.models import model_stack
from tests.factories import ALICE, BOB, CHANNEL, GUILD, message

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
BOT = 2**60 + 1


@pytest.fixture
async def memory(engine, settings):
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW))
    await memory.start(background=False)
    at = NOW - timedelta(hours=2)
    await memory.intake.message(message("the zucchini harvest was huge", author=BOB, name="bob", at=at))
    asked = message("Elefant, what about the quokka zucchini?", author=ALICE, name="alice", at=at + timedelta(1 / 24))
    await memory.intake.message(IncomingMessage(**{**_fields(asked), "kind": Kind.ADDRESSED}))
    reply = message("Bob grew a zucchini wombat, the harvest was huge", author=BOT, name="Elefant", at=NOW)
    await memory.intake.reply(reply, members=[BOB])
    await memory.flush()
    yield memory
    await memory.close()


def _fields(m: IncomingMessage) -> dict[str, object]:
    return {name: getattr(m, name) for name in m.__dataclass_fields__}


async def indexed(memory: MemoryManager, word: str) -> int:
    """How many rows the full-text index itself finds for a word (no join, no read scope)."""
    async with memory.sessions() as session:
        if session.bind.dialect.name == "sqlite":
            query = "SELECT count(*) FROM chat_fts WHERE chat_fts MATCH :word"
        else:
            query = "SELECT count(*) FROM chat_history WHERE search @@ to_tsquery('english', :word)"
        return int(await session.scalar(text(query), {"word": word}) or 0)


async def found(memory: MemoryManager, word: str) -> list[str]:
    async with memory.sessions() as session:
        rows = await search_messages(session, Search(GUILD, (word,), now=NOW, here=CHANNEL, limit=50))
    return [r.text for r in rows]


async def test_questions_to_the_bot_and_its_replies_are_neither_indexed_nor_found(memory):
    assert await indexed(memory, "zucchini") == 1  # bob's speech, and only it
    for marker in ("quokka", "wombat"):
        assert await indexed(memory, marker) == 0, f"{marker}: the bot's conversation is in the full-text index"
        assert await found(memory, marker) == []
    assert await found(memory, "zucchini") == ["the zucchini harvest was huge"]
    hits = await memory.recollection.recall(GUILD, "zucchini quokka wombat harvest", channel_id=CHANNEL, limit=50)
    assert [h.text for h in hits if h.kind == "message"] == ["the zucchini harvest was huge"]


async def test_a_message_re_kinded_leaves_the_index_or_joins_it(memory):
    speech = message("the platypus parade starts at noon", author=BOB, name="bob", at=NOW - timedelta(hours=1))
    await memory.intake.message(speech)
    await memory.flush()
    assert await indexed(memory, "platypus") == 1
    await memory.queue.put(MessageKind(speech.message_id, Kind.ADDRESSED))  # an older version's spill file
    await memory.flush()
    assert await indexed(memory, "platypus") == 0
    await memory.queue.put(MessageKind(speech.message_id, Kind.SPEECH))
    await memory.flush()
    assert await indexed(memory, "platypus") == 1
    assert await found(memory, "platypus") == ["the platypus parade starts at noon"]


async def test_forgetting_a_statement_still_reaches_the_bots_reply_that_repeats_it(memory):
    await memory.facts.remember(GUILD, BOB, "bob grew a zucchini wombat", requested_by=BOB)
    change = await memory.facts.forget(GUILD, BOB, "bob grew a zucchini wombat", requested_by=BOB)
    assert change.found
    async with memory.sessions() as session:
        kept = (await session.execute(text("SELECT message_text FROM chat_history WHERE kind = 2"))).all()
    assert all("wombat" not in body for (body,) in kept), kept
