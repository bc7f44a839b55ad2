"""The texts waiting to be embedded: bounded per guild, newest first, and what is let go is embedded later."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from bot.memory.recall import pending
from bot.memory.recall.pending import Pending, PendingTexts
from db.models import MessageVector
from tests.factories import ALICE, GUILD, T0, message
from tests.memory.recall.test_hybrid import build, stub  # noqa: F401 -- fixtures: the manager, the Gemini stub


def text(message_id: int, guild_id: int = 1) -> Pending:
    return Pending(message_id, guild_id, f"message {message_id}", 7, float(message_id))


def test_the_newest_go_first_and_past_the_bound_the_oldest_are_let_go() -> None:
    waiting = PendingTexts(per_guild=3)
    assert [waiting.add(text(i)) for i in range(5)] == [True, True, True, False, False]
    assert len(waiting) == 3 and waiting.dropped == 2
    assert [p.message_id for p in waiting.take(2)] == [4, 3]
    assert [p.message_id for p in waiting.take(5)] == [2]
    assert len(waiting) == 0 and waiting.take(5) == []


def test_a_busy_guild_neither_pushes_out_nor_holds_up_a_quiet_one() -> None:
    waiting = PendingTexts(per_guild=3)
    waiting.add(text(1, guild_id=2))
    for i in range(10, 20):
        waiting.add(text(i, guild_id=1))
    assert len(waiting) == 4  # the busy guild's bound is its own
    assert sorted(p.message_id for p in waiting.take(2)) == [1, 19]  # each guild's newest, in turn
    waiting.forget(1)
    assert len(waiting) == 0


async def test_texts_let_go_are_embedded_from_the_backlog_once_nothing_new_waits(build, monkeypatch):  # noqa: F811
    monkeypatch.setattr(pending, "PER_GUILD", 3)
    memory = await build()
    for i in range(12):
        await memory.intake.message(message(f"kettle number {i}", author=ALICE, at=T0 - timedelta(minutes=60 - i)))
    await memory.flush()
    await memory.embedding.idle()
    await memory.flush()
    assert memory.embedding.let_go > 0  # noted faster than embedded: the bound held
    assert memory.embedding.waiting == 0
    async with memory.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(MessageVector)) == 12  # none lost
    assert await memory.recollection.vectors_ready(GUILD)


@pytest.mark.parametrize("bound", [1, 4])
def test_the_bound_is_per_guild(bound: int) -> None:
    waiting = PendingTexts(per_guild=bound)
    for guild_id in (1, 2, 3):
        for i in range(bound + 2):
            waiting.add(text(guild_id * 100 + i, guild_id=guild_id))
    assert len(waiting) == 3 * bound and waiting.dropped == 6
