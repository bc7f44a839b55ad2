"""Contexts when the past is not summarised yet (both databases, the real client against the stub): day one of
a guild answers within the guard with the facts and an offline extract, and improves as the backlog lands;
past days are built side by side; a normal day (the scheduler ran at midnight) costs three calls."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from fakes.gemini_stub import GeminiStub, Reply, StubRequest
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from tests.factories import ALICE, BOB, GUILD, message

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


class Recording:
    """The scripted model, noting when each request arrived (to see which ones were in flight together)."""

    def __init__(self) -> None:
        self.arrived: list[tuple[float, str]] = []

    def __call__(self, request: StubRequest) -> Reply:
        kind = (
            "daily"
            if "<transcript>" in request.prompt_text
            else "history"
            if '<day date="' in request.prompt_text
            else "merge"
            if "<today>" in request.prompt_text
            else "other"
        )
        self.arrived.append((time.monotonic(), kind))
        return scripted_model(request)

    def times(self, kind: str) -> list[float]:
        return [at for at, k in self.arrived if k == kind]


@pytest.fixture
async def stub():
    server = await GeminiStub(responder=Recording()).start()
    yield server
    await server.stop()


@pytest.fixture
async def make(engine, settings, stub):
    built: list[MemoryManager] = []

    async def build(**overrides):
        memory = MemoryManager(
            engine, settings.model_copy(update=overrides), llm=model_stack(stub.base_url), clock=FakeClock(NOON)
        )
        await memory.start()
        built.append(memory)
        return memory

    yield build
    for memory in built:
        await memory.close()
        await memory._llm.close()  # type: ignore[union-attr]


async def a_week(memory: MemoryManager) -> None:
    """Ana and Bob talk every day of the week before today, and this morning."""
    for back in range(7):
        at = NOON.replace(hour=9) - timedelta(days=back)
        await memory.intake.message(message(f"Ana's news {back} days ago: the kiln fired", at=at, name="Ana"))
        await memory.intake.message(message(f"Bob's news {back} days ago", author=BOB, name="Bob", at=at))
    await memory.flush()


async def test_day_one_answers_within_the_guard_with_facts_and_extract_then_improves(make, stub):
    memory = await make(memory_wait_seconds=0.5)
    await a_week(memory)
    await memory.facts.remember(GUILD, ALICE, "Ana is a potter", requested_by=ALICE)
    stub.latency = 3.0  # nothing is summarised and the model is slow: the guard must answer

    started = time.perf_counter()
    first = await memory.recollection.context(GUILD, ALICE)
    waited = time.perf_counter() - started
    assert waited < 0.5 + 1.0  # the guard, plus a little for a loaded machine
    assert first is not None and first.startswith("Facts: Ana is a potter.")
    assert "Ana's news 0 days ago" in first  # today, quoted from her own messages
    assert "Ana's news 3 days ago" in first and "On 2026-11-17" in first  # the week, day by day
    assert "Bob" not in first  # only her own lines

    stub.latency = 0.0  # the scheduler's backlog lands ...
    assert memory.scheduler is not None
    await memory.scheduler.catch_up()
    memory.settings.memory_wait_seconds = 10
    later = await memory.recollection.context(GUILD, ALICE)
    assert later is not None and later.startswith("MERGED") and "history=[History: " in later  # ... and it improves


async def test_past_days_of_one_context_are_built_side_by_side(make, stub):
    memory = await make(memory_wait_seconds=30)
    await a_week(memory)
    stub.latency = 1.5  # long beside the scheduling noise of a loaded machine
    recording: Recording = stub.responder  # type: ignore[assignment]
    assert await memory.recollection.context(GUILD, ALICE)
    daily = sorted(recording.times("daily"))
    assert len(daily) == 7  # today and the six days before
    # Four past days (and today's batch) reach the model before the first of them has answered.
    assert daily[4] - daily[0] < stub.latency


async def test_a_normal_day_costs_three_calls_and_today_waits_on_nobody(make, stub):
    first = await make()
    await a_week(first)
    assert first.scheduler is not None
    await first.scheduler.catch_up()  # the nights before: every finished day summarised once
    recording: Recording = stub.responder  # type: ignore[assignment]
    recording.arrived.clear()
    stub.latency = 1.5

    fresh = await make(memory_wait_seconds=30)  # a restarted bot: nothing in its caches
    assert await fresh.recollection.context(GUILD, ALICE)
    kinds = [kind for _, kind in recording.arrived]
    assert sorted(kinds) == ["daily", "history", "merge"]  # today's batch, the week's history, the merge
    today, history = recording.times("daily")[0], recording.times("history")[0]
    assert abs(today - history) < stub.latency  # in flight together, not one after the other
