"""The transient track on both databases against the Gemini stub: calls, caches, time, single flight, fallbacks."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from bot.lifecycle import running
from bot.llm.client import LLM
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from db.models import DailySummary, UserOptOut
from fakes.gemini_stub import GeminiStub, error
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from tests.factories import ALICE, BOB, CHANNEL, GUILD, message

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
CAROL = 2**60 + 1003


def daily_calls(stub: GeminiStub) -> int:
    return sum("<transcript>" in r.prompt_text for r in stub.requests)


@pytest.fixture
async def make(engine, settings, stub):
    """Build MemoryManagers on the shared database, each with its own caches, against the stub."""
    built: list[tuple[MemoryManager, LLM]] = []

    async def build(clock=None, **overrides):
        # What is built, not the latency guard (its own test sets it): on a busy machine a build can take longer
        # than the guard's second, and the reply would rightly get the unmerged fallback.
        overrides = {"memory_wait_seconds": 60, **overrides}
        llm = model_stack(stub.base_url, fast_model="gemini-2.5-flash", offline=overrides.pop("offline", None))
        memory = MemoryManager(engine, settings.model_copy(update=overrides), llm=llm, clock=clock or FakeClock(NOON))
        await memory.start()
        built.append((memory, llm))
        return memory

    yield build
    for memory, llm in built:
        await memory.close()
        await llm.close()


async def seed(memory: MemoryManager, day: datetime, authors=((ALICE, "Ana"), (BOB, "Bob"), (CAROL, "Carol"))):
    for i, (author, name) in enumerate(authors):
        for j in range(3):
            await memory.intake.message(
                message(
                    f"{name} message {j} on {day:%m-%d}",
                    author=author,
                    name=name,
                    at=day + timedelta(minutes=10 * i + j),
                )
            )
    await memory.flush()


async def test_one_daily_call_per_guild_day_persisted_and_reused_by_a_fresh_manager(make, stub, engine):
    memory = await make()
    yesterday = NOON - timedelta(days=1)
    await seed(memory, yesterday - timedelta(hours=2))
    assert memory.summaries is not None
    day = yesterday.date()
    first = await memory.summaries.past_day(GUILD, day)
    assert set(first) == {ALICE, BOB, CAROL} and "wrote 3 messages" in first[ALICE]
    await memory.summaries.past_day(GUILD, day)
    assert daily_calls(stub) == 1
    fresh = await make()  # a restarted bot, or a second process: nothing cached in memory
    assert fresh.summaries is not None and await fresh.summaries.past_day(GUILD, day) == first
    assert daily_calls(stub) == 1 and len(stub.requests) == 1
    async with memory.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(DailySummary)) == 3


async def test_fifty_concurrent_cold_calls_make_one_daily_call(make, stub):
    memory = await make()  # single flight is tested here; the latency guard below
    await seed(memory, NOON - timedelta(hours=1))
    stub.latency = 0.1
    users = [ALICE, BOB, CAROL] * 17
    results = await asyncio.gather(*(memory.recollection.context(GUILD, u) for u in users[:50]))
    assert all(r for r in results)
    assert daily_calls(stub) == 1


async def test_current_day_refreshes_hourly(make, stub):
    clock = FakeClock(NOON)
    memory = await make(clock)
    await seed(memory, NOON - timedelta(hours=1))
    assert memory.summaries is not None
    await memory.summaries.today(GUILD, clock.now())
    clock.advance(minutes=59)
    await memory.summaries.today(GUILD, clock.now())
    assert daily_calls(stub) == 1
    clock.advance(minutes=2)  # 61 minutes after the first call
    await memory.summaries.today(GUILD, clock.now())
    assert daily_calls(stub) == 2


async def test_latency_guard_answers_within_about_a_second_with_a_slow_model(make, stub):
    memory = await make(memory_wait_seconds=1.0)
    await seed(memory, NOON - timedelta(hours=1))
    await memory.facts.remember(GUILD, ALICE, "Ana is vegetarian", requested_by=ALICE)
    stub.latency = 30.0
    started = time.perf_counter()
    context = await memory.recollection.context(GUILD, ALICE)
    # A hang guard, not a latency target: without the wait the model's 30 s would be waited for.
    assert time.perf_counter() - started < 10
    assert context is not None and "Ana is vegetarian" in context
    assert f"context build for a member of guild {GUILD}" in running()  # it goes on to warm the caches
    await memory.close()
    assert running() == []  # stopped, not left to touch a disposed engine


async def test_llm_down_still_returns_facts(make, stub):
    from bot.llm.offline import OfflineProvider

    memory = await make(offline=OfflineProvider())  # facts merge offline while the model is down
    await seed(memory, NOON - timedelta(hours=1))
    stub.responder = lambda request: error(500)
    await memory.facts.remember(GUILD, ALICE, "Ana is vegetarian", requested_by=ALICE)
    context = await memory.recollection.context(GUILD, ALICE)
    assert context is not None and context.startswith("Facts: Ana is vegetarian.")


async def test_merged_context_is_cached_by_content(make, stub):
    memory = await make()
    await seed(memory, NOON - timedelta(hours=1))
    first = await memory.recollection.context(GUILD, ALICE)
    calls = len(stub.requests)
    assert first is not None and first.startswith("MERGED")
    assert await memory.recollection.context(GUILD, ALICE) == first and len(stub.requests) == calls
    reports = memory.admin.cache_reports()  # what /memory-admin stats shows
    assert (reports["merged context"].hits, reports["merged context"].misses) == (1, 1)
    assert reports["today"].hit_rate == 0.5 and reports["facts"].size == 1
    await memory.facts.remember(GUILD, ALICE, "Ana is vegetarian", requested_by=ALICE)  # facts changed: re-merge
    again = await memory.recollection.context(GUILD, ALICE)
    assert again is not None and "Ana is vegetarian" in again


async def test_facts_survive_a_merge_that_leaves_them_out_and_the_budget_holds(make, stub):
    from bot.llm.tokens import estimate_tokens
    from fakes.gemini_stub import text

    def forgetful(request):  # a model that ignores the facts and writes far too much
        if "<today>" in request.prompt_text:
            return text("Ana spent the day on launch plans. " * 400)
        return scripted_model(request)

    memory = await make(context_token_budget=300)
    await seed(memory, NOON - timedelta(hours=1))
    await memory.facts.remember(GUILD, ALICE, "Ana is vegetarian and lives in Porto", requested_by=ALICE)
    stub.responder = forgetful
    context = await memory.recollection.context(GUILD, ALICE)
    assert context is not None and context.startswith("Facts: Ana is vegetarian and lives in Porto.")
    assert "Notes: Ana spent the day on launch plans." in context and estimate_tokens(context) <= 300
    merge = " ".join(next(r for r in stub.requests if "<today>" in r.prompt_text).prompt_text.split())
    note = 300 - estimate_tokens("Facts: Ana is vegetarian and lives in Porto.")  # what the facts leave
    assert "at most 300 tokens" in merge and f"at most about {note} tokens" in merge


async def test_nothing_known_is_none(make):
    memory = await make()
    assert await memory.recollection.context(GUILD, ALICE) is None


async def test_opted_out_members_never_reach_a_prompt(make, stub):
    memory = await make()
    await seed(memory, NOON - timedelta(hours=1))
    async with memory.sessions() as session, session.begin():
        session.add(UserOptOut(guild_id=GUILD, user_id=BOB, at=NOON))
    assert memory.summaries is not None
    summaries = await memory.summaries.today(GUILD, NOON)
    assert BOB not in summaries
    assert all("Bob message" not in r.prompt_text for r in stub.requests)


async def test_a_large_day_is_chunked_and_merged(make, stub):
    memory = await make(daily_input_tokens=1000)
    for i in range(120):
        await memory.intake.message(
            message(
                f"Ana talks about topic {i} " + "word " * 20,
                author=ALICE,
                name="Ana",
                at=NOON - timedelta(days=1, minutes=i),
            )
        )
    await memory.flush()
    assert memory.summaries is not None
    summaries = await memory.summaries.past_day(GUILD, (NOON - timedelta(days=1)).date())
    assert daily_calls(stub) > 1 and memory.summaries.batch_calls == daily_calls(stub)
    assert summaries[ALICE].count("wrote") == daily_calls(stub) or len(summaries[ALICE]) <= 600


async def test_history_keeps_dated_days_and_is_persisted(make, stub):
    memory = await make()
    for back in range(1, 7):
        await seed(memory, NOON - timedelta(days=back), authors=((ALICE, "Ana"),))
    assert memory.summaries is not None
    history = await memory.summaries.history(GUILD, ALICE, NOON.date())
    assert history.startswith("History: ") and "2026-11-14" in history and "2026-11-19" in history
    calls = len(stub.requests)
    fresh = await make()
    assert fresh.summaries is not None and await fresh.summaries.history(GUILD, ALICE, NOON.date()) == history
    assert len(stub.requests) == calls


async def test_a_refused_day_is_stored_empty_and_not_retried(make, stub, engine):
    from fakes.gemini_stub import Reply

    memory = await make()
    day = NOON - timedelta(days=2)
    await seed(memory, day)
    stub.responder = lambda request: Reply(blocked=True)
    assert memory.summaries is not None
    assert await memory.summaries.past_day(GUILD, day.date()) == {ALICE: "", BOB: "", CAROL: ""}
    fresh = await make()
    assert fresh.summaries is not None and await fresh.summaries.past_day(GUILD, day.date()) == {
        ALICE: "",
        BOB: "",
        CAROL: "",
    }
    assert daily_calls(stub) == 1


async def test_a_guild_time_zone_moves_its_day_boundaries(make, stub):
    import zoneinfo

    memory = await make()
    # 23:30 UTC on the 19th is already the 20th in Tokyo.
    await memory.intake.message(
        message("late night", author=ALICE, name="Ana", at=NOON.replace(day=19, hour=23, minute=30))
    )
    await memory.flush()
    assert memory.summaries is not None
    assert ALICE in await memory.summaries.past_day(GUILD, (NOON - timedelta(days=1)).date())
    await memory.admin.set_timezone(GUILD, "Asia/Tokyo")
    assert memory.summaries.zone(GUILD) == "Asia/Tokyo"
    tokyo_today = await memory.summaries.today(GUILD, NOON)
    assert ALICE in tokyo_today
    fresh = await make()
    assert fresh.summaries is not None and fresh.summaries.zone(GUILD) == "Asia/Tokyo"
    with pytest.raises(zoneinfo.ZoneInfoNotFoundError):
        await memory.admin.set_timezone(GUILD, "Mars/Olympus")


async def test_excluding_a_channel_drops_the_summaries_that_saw_it(make, stub):
    memory = await make()
    yesterday = NOON - timedelta(days=1)
    side = CHANNEL + 7
    await memory.intake.message(message("the launch date is March 3", channel=side, at=yesterday))
    await memory.intake.message(message("hello all", at=yesterday + timedelta(minutes=1)))
    await memory.flush()
    assert memory.summaries is not None
    assert "launch date" in (await memory.summaries.past_day(GUILD, yesterday.date()))[ALICE]
    dropped = await memory.admin.set_channel_mode(GUILD, side, "exclude")
    assert dropped["daily_summaries"] == 1
    again = await memory.summaries.past_day(GUILD, yesterday.date())  # rebuilt without the channel
    assert "launch date" not in again[ALICE] and "hello all" in again[ALICE] and daily_calls(stub) == 2
    assert await memory.admin.set_channel_mode(GUILD, side, "exclude") == Counter()  # no change, nothing dropped


async def test_closing_stops_a_rollup_build_running_in_the_background(make, stub):
    memory = await make()
    await seed(memory, NOON - timedelta(days=20))
    stub.latency = 5.0
    assert memory.rollups is not None
    assert await memory.rollups.earlier(GUILD, ALICE, NOON.date()) == ""  # answered at once, built behind
    assert f"rollups for a member of guild {GUILD}" in running()
    await memory.close()  # before the build has taken its first step: it must not run on after this
    assert running() == []
    assert not any('<day date="' in r.prompt_text for r in stub.requests)  # no rollup was asked of the model


async def test_rollups_summarise_older_weeks_once_and_persist_them(make, stub):
    memory = await make()
    for back in (20, 45):
        await seed(memory, NOON - timedelta(days=back))
    # A reply that waited for even one model call (6 s) would miss the 5 s bound below; a reply that does not wait
    # takes milliseconds, so the bound only has to hold on a machine loaded many times over.
    stub.latency = 6.0
    assert await asyncio.wait_for(memory.recollection.context(GUILD, ALICE), 5.0) is None  # not rolled up yet
    stub.latency = 0.0
    await memory.rollups.earlier(GUILD, ALICE, NOON.date(), wait=True)  # joins the build started in background
    context = await memory.recollection.context(GUILD, ALICE)
    assert context is not None and "earlier=[" in context
    earlier = context.split("earlier=[", 1)[1]
    week_of = (NOON - timedelta(days=20)).date()
    week_of -= timedelta(days=week_of.weekday())
    assert f"Week of {week_of}: History: " in earlier and "Ana message 0" in earlier
    calls = sum('<day date="' in r.prompt_text for r in stub.requests)
    assert calls == 2  # one per week with anything in it; empty periods are stored without a call
    fresh = await make()  # another process: rollups come from SQL
    assert await fresh.recollection.context(GUILD, ALICE) == context
    assert sum('<day date="' in r.prompt_text for r in stub.requests) == calls
