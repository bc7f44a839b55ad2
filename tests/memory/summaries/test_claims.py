"""One model call per guild-day across processes on PostgreSQL: three real processes race one day; histories and
rollups race across three managers with engines of their own; a claimer that crashes mid-build gives way."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.settings import Settings
from db.engine import create_engine
from db.models import BuildClaim, DailySummary, Rollup
from fakes.gemini_stub import GeminiStub, Reply, StubRequest
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from tests.conftest import _truncate_pg
from tests.factories import ALICE, BOB, GUILD, message

ROOT = Path(__file__).resolve().parents[3]
NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
YESTERDAY = (NOON - timedelta(days=1)).date()


def calls(stub: GeminiStub, marker: str) -> int:
    return sum(marker in r.prompt_text for r in stub.requests)


def slow(seconds: float):
    def respond(request: StubRequest) -> Reply:
        reply = scripted_model(request)
        reply.delay = seconds
        return reply

    return respond


@pytest.fixture
async def pg(pg_database):
    await _truncate_pg(pg_database)
    return pg_database


@pytest.fixture
async def managers(pg, stub):
    """Managers as separate processes would have them: each its own engine, caches and model client."""
    made: list[tuple[MemoryManager, object]] = []

    async def make(**overrides) -> MemoryManager:
        engine = create_engine(pg)
        settings = Settings(_env_file=None, database_url=pg, **overrides)  # type: ignore[call-arg]
        memory = MemoryManager(engine, settings, llm=model_stack(stub.base_url), clock=FakeClock(NOON))
        await memory.start()
        made.append((memory, engine))
        return memory

    yield make
    for memory, engine in made:
        await memory.close()
        await memory._llm.close()  # type: ignore[union-attr]
        await engine.dispose()  # type: ignore[attr-defined]


async def say(memory: MemoryManager, days_back: list[int]) -> None:
    for back in days_back:
        at = NOON.replace(hour=9) - timedelta(days=back)
        await memory.intake.message(message(f"Ana on day -{back}", name="Ana", at=at))
        await memory.intake.message(message(f"Bob on day -{back}", author=BOB, name="Bob", at=at))
    await memory.flush()


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LOG_LEVEL": "WARNING"}


async def child(*args: str, cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.memory.claim_child",
        *args,
        cwd=cwd,
        env=child_env(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def expect(process: asyncio.subprocess.Process, word: str) -> None:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if line.decode().strip() != word:
        _, err = await process.communicate()
        raise AssertionError(f"expected {word}, got {line!r}: {err.decode()}")


async def test_three_processes_racing_one_guild_day_make_one_daily_call(pg, managers, stub, tmp_path):
    await say(await managers(), [1])
    stub.responder = slow(1.0)  # long enough for all three to find the day unsummarised
    racers = [await child("day", pg, stub.base_url, YESTERDAY.isoformat(), cwd=tmp_path) for _ in range(3)]
    for racer in racers:
        await expect(racer, "READY")
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write(b"go\n")
        await racer.stdin.drain()
    results = []
    for racer in racers:
        out, err = await asyncio.wait_for(racer.communicate(), 60)
        assert racer.returncode == 0, err.decode()
        results.append(json.loads(out.decode().splitlines()[-1]))
    assert calls(stub, "<transcript>") == 1  # one process asked the model; two read what it stored
    assert results[0] == results[1] == results[2] and set(results[0]) == {str(ALICE), str(BOB)}
    engine = create_engine(pg)
    async with engine.connect() as conn:
        assert await conn.scalar(select(func.count()).select_from(DailySummary)) == 2
        assert await conn.scalar(select(func.count()).select_from(BuildClaim)) == 0  # every claim given back
    await engine.dispose()


async def test_histories_and_rollups_are_built_once_across_processes(managers, stub):
    first = await managers()
    await say(first, [1, 2, 3, 20, 22])  # the last week, and a week three weeks back
    others = [first, await managers(), await managers()]
    stub.responder = slow(0.3)
    today = NOON.date()

    histories = await asyncio.gather(*(m.summaries.history(GUILD, ALICE, today) for m in others))  # type: ignore[union-attr]
    assert histories[0] == histories[1] == histories[2] and "Ana on day -3" in histories[0]
    assert calls(stub, "<transcript>") == 3 and calls(stub, '<day date="') == 1  # three days, one history

    earlier = await asyncio.gather(*(m.rollups.earlier(GUILD, ALICE, today, wait=True) for m in others))  # type: ignore[union-attr]
    assert earlier[0] == earlier[1] == earlier[2] and "Ana on day -20" in earlier[0]
    async with first.sessions() as session:
        rollups = await session.scalar(select(func.count()).select_from(Rollup).where(Rollup.user_id == ALICE))
        days = await session.scalar(select(func.count(func.distinct(DailySummary.day))))
    assert rollups == 1  # one week with anything of hers in it
    assert calls(stub, '<day date="') == 1 + rollups  # the history, and one call per rollup
    assert calls(stub, "<transcript>") == days == 5  # every day once, whichever process built it


async def test_a_crashed_claimer_gives_way_when_its_lease_lapses(pg, managers, stub, tmp_path):
    survivor = await managers()
    await say(survivor, [1])
    holder = await child("hold", pg, "1.0", YESTERDAY.isoformat(), cwd=tmp_path)
    await expect(holder, "CLAIMED")  # it claimed the day and is "calling the model"

    assert survivor.summaries is not None
    build = asyncio.create_task(survivor.summaries.past_day(GUILD, YESTERDAY))
    await asyncio.sleep(1.5)  # longer than the lease: the holder is alive and renewing it
    assert not build.done() and calls(stub, "<transcript>") == 0  # so the survivor waits, calling nothing
    holder.send_signal(signal.SIGKILL)  # it crashes: nobody renews the claim
    await holder.wait()
    found = await asyncio.wait_for(build, 30)
    assert set(found) == {ALICE, BOB} and calls(stub, "<transcript>") == 1
    assert survivor.claims.waited >= 1 and survivor.claims.won == 1
