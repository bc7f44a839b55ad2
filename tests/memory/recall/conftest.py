"""The memory recall's tests share: a started manager on the test's database (both dialects), words only."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.memory.manager import MemoryManager
from tests.memory.facts.test_store import AppendingModel


@pytest.fixture
async def memory(engine, settings) -> AsyncIterator[MemoryManager]:
    memory = MemoryManager(engine, settings, facts_model=AppendingModel())
    await memory.start()
    yield memory
    await memory.close()
