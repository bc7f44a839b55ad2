"""After an edit (bot/memory/changes.py `after_writes`): what was built from the old words goes, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.memory.manager import MemoryManager
from db.messages import batch_writer_for
from db.models import ChatMessage, MessageVector
from db.records import MessageVector as VectorRecord
from tests.factories import T0, message

LAST_MINUTE = datetime(9999, 12, 31, 23, 59, tzinfo=UTC)  # older versions stored any time they were given


@pytest.fixture
async def memory(engine, settings):
    memory = MemoryManager(engine, settings)  # no embedder: a vector that goes is not made again here
    await memory.start()
    yield memory
    await memory.close()


async def vectors_of(memory: MemoryManager, message_id: int) -> list[bytes]:
    async with memory.sessions() as session:
        return list(await session.scalars(select(MessageVector.vector).where(MessageVector.message_id == message_id)))


def vector_for(said, text: str) -> VectorRecord:
    return VectorRecord(said.message_id, said.guild_id, "stand-in", bytes([1, 2, 3, 4]), 0.5, text=text)


@pytest.mark.parametrize("at", [T0, LAST_MINUTE], ids=["today", "stored at the calendar's last minute"])
async def test_an_edit_takes_the_vector_of_the_old_words_with_it(memory, at):
    said = message("the old words about otters", at=at)
    writer = batch_writer_for(memory.engine)  # as an older version stored it, whatever its time
    try:
        await writer.write([said, vector_for(said, said.content)])
    finally:
        await writer.close()
    assert await vectors_of(memory, said.message_id) == [bytes([1, 2, 3, 4])]

    await memory.intake.edit(said.message_id, "new words about beavers", T0 + timedelta(hours=1))
    await memory.flush()
    async with memory.sessions() as session:
        assert (await session.get(ChatMessage, said.message_id)).message_text == "new words about beavers"
    # The old meaning no longer answers recall (the embedding backlog embeds the new words, where there is a model).
    assert await vectors_of(memory, said.message_id) == []
