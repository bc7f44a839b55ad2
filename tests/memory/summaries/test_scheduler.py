"""The summary scheduler on both databases, with the real client against the stub: the backlog newest first,
each guild's day after its local midnight, failures isolated and logged once, deletions winning, lifecycle."""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select

from bot.lifecycle import running
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.summaries import scheduler as scheduling
from db.models import DailySummary
from fakes.gemini_stub import GeminiStub, Reply, StubRequest, error
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from tests.factories import ALICE, BOB, GUILD, OTHER_GUILD, message

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DAY = re.compile(r"\((\d{4}-\d{2}-\d{2}), times in")


def summarised_days(stub: GeminiStub) -> list[str]:
    """The day of each daily-summary request, in the order the model received them."""
    return [m.group(1) for r in stub.requests if "<transcript>" in r.prompt_text and (m := DAY.search(r.prompt_text))]


@pytest.fixture
async def make(engine, settings, stub):
    built: list[MemoryManager] = []

    async def build(clock=None, *, breaker_failures=1000, **overrides):
        llm = model_stack(stub.base_url, breaker_failures=breaker_failures)
        memory = MemoryManager(engine, settings.model_copy(update=overrides), llm=llm, clock=clock or FakeClock(NOON))
        await memory.start()
        built.append(memory)
        return memory

    yield build
    for memory in built:
        await memory.close()
        await memory._llm.close()  # type: ignore[union-attr]


async def seed(memory: MemoryManager, days_back: list[int], *, guild: int = GUILD, hour: int = 10) -> None:
    for back in days_back:
        at = NOON.replace(hour=hour) - timedelta(days=back)
        await memory.intake.message(message(f"Ana on day -{back}", guild=guild, at=at, name="Ana"))
        await memory.intake.message(message(f"Bob on day -{back}", guild=guild, author=BOB, name="Bob", at=at))
    await memory.flush()


async def stored_days(memory: MemoryManager, guild: int = GUILD) -> set[date]:
    async with memory.sessions() as session:
        return set(await session.scalars(select(DailySummary.day).where(DailySummary.guild_id == guild).distinct()))


async def test_the_backlog_is_built_newest_first_once_and_only_within_reach(make, stub):
    memory = await make(summary_concurrency=1)
    await seed(memory, [0, 1, 2, 3, 5, 8, 13, 40, 400])  # today is not finished; 400 days back is beyond reach
    assert memory.scheduler is not None
    done = await memory.scheduler.catch_up()
    expected = [(NOON - timedelta(days=b)).date() for b in (1, 2, 3, 5, 8, 13, 40)]
    assert summarised_days(stub) == [d.isoformat() for d in expected]  # newest first, one call each
    assert done.built == 7 and done.failed == 0 and await stored_days(memory) == set(expected)
    assert (await memory.scheduler.catch_up()).built == 0 and len(summarised_days(stub)) == 7  # nothing twice


async def test_guilds_are_interleaved_newest_first(make, stub):
    memory = await make(summary_concurrency=1)
    await seed(memory, [1, 2], guild=GUILD)
    await seed(memory, [1, 2], guild=OTHER_GUILD)
    assert memory.scheduler is not None
    await memory.scheduler.catch_up()
    day1, day2 = ((NOON - timedelta(days=b)).date().isoformat() for b in (1, 2))
    assert summarised_days(stub) == [day1, day1, day2, day2]  # every guild's yesterday before any older day


async def test_a_guild_day_is_summarised_after_its_own_local_midnight_plus_jitter(make, stub, monkeypatch):
    monkeypatch.setattr(scheduling.random, "uniform", lambda low, high: high)  # the latest the jitter allows
    clock = FakeClock(datetime(2026, 11, 20, 14, 30, tzinfo=UTC))  # 23:30 in Tokyo
    memory = await make(clock, summary_jitter_seconds=600)
    await memory.admin.set_timezone(GUILD, "Asia/Tokyo")
    await memory.intake.message(message("late in Tokyo", at=clock.now()))
    await memory.flush()
    scheduler = memory.scheduler
    assert scheduler is not None
    await scheduler.catch_up()  # the start-up pass: nothing finished yet
    assert summarised_days(stub) == [] and scheduler.due(clock.now()) == []
    clock.advance(minutes=35)  # 00:05 in Tokyo: midnight has passed, its jitter (10 minutes) has not
    assert scheduler.due(clock.now()) == []
    clock.advance(minutes=6)  # 00:11
    assert scheduler.due(clock.now()) == [GUILD]
    await scheduler.catch_up(scheduler.due(clock.now()))
    assert summarised_days(stub) == ["2026-11-20"]  # the Tokyo day that just ended
    assert scheduler.due(clock.now()) == []  # done for today


async def test_a_failing_day_blocks_no_other_and_is_logged_once(make, stub, caplog):
    memory = await make()
    await seed(memory, [1, 2, 3])
    bad = (NOON - timedelta(days=2)).date().isoformat()

    def refuses_one_day(request: StubRequest) -> Reply:
        return error(400) if f"({bad}," in request.prompt_text else scripted_model(request)

    stub.responder = refuses_one_day
    assert memory.scheduler is not None
    with caplog.at_level(logging.DEBUG, logger="bot.memory.summaries.scheduler"):
        first = await memory.scheduler.catch_up()
        second = await memory.scheduler.catch_up()
    assert (first.built, first.failed, second.built, second.failed) == (2, 1, 0, 1)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and bad in r.getMessage()]
    assert len(warnings) == 1 and "400" in warnings[0].getMessage()  # once, with the cause
    stub.responder = scripted_model  # the model recovers: the next pass builds the day
    assert (await memory.scheduler.catch_up()).built == 1
    assert len(await stored_days(memory)) == 3


async def test_an_open_breaker_stops_the_pass_and_the_next_one_resumes(make, stub):
    memory = await make(breaker_failures=2, summary_concurrency=1)
    await seed(memory, [1, 2, 3, 4, 5])
    stub.responder = lambda request: error(500)
    assert memory.scheduler is not None
    done = await memory.scheduler.catch_up()
    assert done.stopped and done.failed == 2 and len(stub.requests) == 2  # the breaker opened: no hammering
    for lane in memory._llm.primary.lanes.values():  # type: ignore[union-attr]
        lane.breaker.success()  # its cool-down is over and a probe got through
    stub.responder = scripted_model
    assert (await memory.scheduler.catch_up()).built == 5


async def test_a_deletion_during_a_scheduled_build_is_never_written_back(make, stub):
    memory = await make()
    await seed(memory, [1])

    def slow(request: StubRequest) -> Reply:
        reply = scripted_model(request)
        reply.delay = 0.5
        return reply

    stub.responder = slow
    assert memory.scheduler is not None
    job = asyncio.create_task(memory.scheduler.catch_up())
    while not stub.requests:  # noqa: ASYNC110 - the model is summarising the day, Bob's message in it
        await asyncio.sleep(0.01)
    await memory.admin.forget_member(GUILD, BOB)
    await job
    async with memory.sessions() as session:
        users = set(await session.scalars(select(DailySummary.user_id)))
    assert BOB not in users  # the build read Bob's message before the deletion: it stored nothing
    assert (await memory.scheduler.catch_up()).built == 1  # the next pass summarises the day without him
    async with memory.sessions() as session:
        assert set(await session.scalars(select(DailySummary.user_id))) == {ALICE}


async def test_the_scheduler_starts_and_stops_with_memory(engine, settings, stub, monkeypatch):
    monkeypatch.setattr(scheduling, "START_DELAY_SECONDS", 0.0)
    llm = model_stack(stub.base_url)
    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOON))
    await memory.start()
    await seed(memory, [1, 2])
    await memory.close()
    assert "summary scheduler" not in running()

    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOON))  # a bot starting on that database
    await memory.start(schedule=True)
    assert "summary scheduler" in running()
    async with asyncio.timeout(30):
        while len(await stored_days(memory)) < 2:  # noqa: ASYNC110 - it builds the backlog by itself
            await asyncio.sleep(0.05)
    await memory.close()
    assert running() == []
    await llm.close()
    async with memory.sessions() as session:
        assert await session.scalar(select(func.count(func.distinct(DailySummary.day)))) == 2
