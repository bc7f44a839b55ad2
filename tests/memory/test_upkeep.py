"""The planner's statistics follow the tables as messages are stored (a catch-up, a spill replay, growth), on both
databases, without anyone asking: after enough new messages, the background check analyses again."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.memory import upkeep
from bot.memory.manager import MemoryManager
from db import statistics
from tests.db.test_statistics import described_rows
from tests.factories import T0, message


async def test_statistics_follow_a_burst_of_stored_messages(engine, settings, monkeypatch):
    monkeypatch.setattr(upkeep, "REFRESH_ROWS", 1_000)
    monkeypatch.setattr(upkeep, "CHECK_SECONDS", 0.05)
    memory = MemoryManager(engine, settings.model_copy(update={"embedding_model": "none"}))
    await memory.start(background=True)
    try:
        for i in range(300):
            await memory.intake.message(message(f"first words {i}", at=T0 + timedelta(minutes=i)))
        await memory.flush()
        await memory.statistics.refresh()  # as an import's end does: 300 rows described
        assert not statistics.drifted(*await described_rows(memory))
        for i in range(3_000):  # a catch-up's worth, 10 times the rows described
            await memory.intake.message(message(f"caught up {i}", at=T0 + timedelta(hours=6, seconds=i)), wait=True)
        await memory.flush()
        for _ in range(400):  # a hang guard: the check runs every 0.05 s here
            if not statistics.drifted(*await described_rows(memory)):
                break
            await asyncio.sleep(0.05)
        described, held = await described_rows(memory)
        assert not statistics.drifted(described, held), f"{described:.0f} rows described of {held}"
    finally:
        await memory.close()
