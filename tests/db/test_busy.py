"""A busy PostgreSQL (db/busy.py, db/engine.py): a real deadlock and a lock wait that runs out are told from storage
being away and run again; every connection of the engine bounds its lock waits and its idle transactions."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from db.busy import is_busy, retry_busy
from db.engine import PG_SERVER_SETTINGS, create_engine

KEYS = (0x7E57, 1), (0x7E57, 2)


@pytest.fixture
async def pg(db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: no deadlock, no lock timeout (its busy handler waits)")
    engine = create_engine(db_url)
    yield engine
    await engine.dispose()


async def deadlock(pg, *, attempts: list[int]) -> str:
    """Two transactions that take two locks in opposite orders; the one PostgreSQL picks is rolled back."""
    first_held, second_held = asyncio.Event(), asyncio.Event()

    async def one(mine: tuple[int, int], theirs: tuple[int, int], held: asyncio.Event, other: asyncio.Event) -> str:
        async def work() -> str:
            attempts.append(mine[1])
            async with pg.begin() as conn:
                await conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": mine[0], "b": mine[1]})
                held.set()
                await asyncio.wait_for(other.wait(), 10)
                await conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": theirs[0], "b": theirs[1]})
            return "done"

        return await retry_busy(work)

    results = await asyncio.gather(
        one(KEYS[0], KEYS[1], first_held, second_held), one(KEYS[1], KEYS[0], second_held, first_held)
    )
    return ",".join(results)


async def test_the_engine_bounds_lock_waits_and_idle_transactions(pg):
    async with pg.connect() as conn:
        for name, value in PG_SERVER_SETTINGS.items():
            assert await conn.scalar(text(f"SHOW {name}")) == value


async def test_a_deadlock_is_busy_and_runs_again_until_both_are_done(pg):
    attempts: list[int] = []
    assert await deadlock(pg, attempts=attempts) == "done,done"
    assert len(attempts) == 3  # one of the two was rolled back once, and ran again


async def test_a_lock_wait_that_runs_out_is_busy_and_storage_away_is_not(pg, db_url):
    async with pg.begin() as holder:
        await holder.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": KEYS[0][0], "b": KEYS[0][1]})
        with pytest.raises(DBAPIError) as waited:
            async with pg.begin() as conn:
                await conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": KEYS[0][0], "b": KEYS[0][1]})
    assert getattr(waited.value.orig, "sqlstate", None) == "55P03" and is_busy(waited.value)
    away = create_engine(db_url.replace("/elefant_test", "/no_such_database_here"))
    try:
        with pytest.raises(Exception) as refused:
            async with away.connect():
                pass
    finally:
        await away.dispose()
    assert not is_busy(refused.value)


async def test_a_busy_answer_is_retried_a_bounded_number_of_times_then_raised_as_it_was(pg):
    calls = 0

    async def always_waits() -> None:
        nonlocal calls
        calls += 1
        async with pg.begin() as conn:
            await conn.execute(text("SET LOCAL lock_timeout = '10ms'"))
            await conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": KEYS[1][0], "b": KEYS[1][1]})

    async with pg.begin() as holder:
        await holder.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": KEYS[1][0], "b": KEYS[1][1]})
        with pytest.raises(DBAPIError) as raised:
            await retry_busy(always_waits, attempts=3)
    assert calls == 3 and is_busy(raised.value)
