"""Other processes' changes are followed with no holes: a reply begun after one committed never carries what it
changed, the feed cannot skip a change that commits out of id order (PostgreSQL), and LISTEN comes back after
the database dropped the connection. Timed polling is turned off (an hour) where it would hide the fault."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from bot.memory import coherence
from bot.memory.clock import FakeClock
from bot.memory.coherence import ChangeFeed
from bot.memory.facts import store as facts_store
from bot.memory.manager import MemoryManager
from db import changes
from db.engine import create_engine, create_session_factory
from fakes.models import model_stack
from tests.factories import ALICE, GUILD, T0, message, minutes

NOW = T0 + minutes(60)


@pytest.fixture
async def two(db_url, settings, monkeypatch):
    monkeypatch.setattr(coherence, "POLL_SECONDS", 3600.0)
    monkeypatch.setattr(facts_store, "READ_CACHE_SECONDS", 3600.0)  # only a change may drop what is cached
    made = []
    for _ in range(2):
        engine = create_engine(db_url)
        manager = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW))
        await manager.start()
        made.append((manager, engine))
    yield [manager for manager, _ in made]
    for manager, engine in made:
        await manager.close()
        await engine.dispose()


async def test_a_reply_after_another_processs_forget_me_carries_nothing_of_it(two):
    a, b = two
    a.directory.note_name(GUILD, ALICE, "alice", "alice")
    await a.facts.remember(GUILD, ALICE, "alice keeps bees", requested_by=ALICE)
    await a.intake.message(message("my bees swarmed today", at=NOW - minutes(5)))
    await a.flush()
    assert "bees" in (await a.recollection.describe(GUILD, ALICE) or "")  # cached in a
    await b.admin.forget_member(GUILD, ALICE)
    await a.recollection.follow_others()  # what a reply does first
    assert "bees" not in (await a.recollection.context(GUILD, ALICE) or "")


async def test_the_feed_cannot_skip_a_change_that_commits_after_a_newer_one(db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: changes commit in id order")
    engine = create_engine(db_url)
    sessions = create_session_factory(engine)
    seen: list[int] = []

    async def heard(change: changes.Change) -> None:
        seen.append(change.id)

    feed = ChangeFeed(engine, sessions, heard)
    at = datetime.now(UTC)
    try:
        async with sessions() as slow:
            await slow.begin()
            first = await changes.record(slow, GUILD, None, "messages", origin="slow", at=at)

            async def quick() -> int:
                async with sessions() as session, session.begin():
                    return await changes.record(session, GUILD + 1, None, "messages", origin="quick", at=at)

            second = asyncio.ensure_future(quick())
            await asyncio.wait({second}, timeout=1.0)
            await feed.poll()  # a reader passing by now must not move past the slow change
            await slow.commit()
        await asyncio.wait_for(second, timeout=30)
        await feed.poll()
        assert seen == [first, second.result()]
    finally:
        await engine.dispose()


async def test_listen_comes_back_after_the_database_drops_the_connection(two, db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    a, b = two
    a.directory.note_name(GUILD, ALICE, "alice", "alice")
    await a.facts.remember(GUILD, ALICE, "alice keeps bees", requested_by=ALICE)
    assert "bees" in (await a.facts.cached(GUILD, ALICE) or "")  # cached in a until a change reaches it
    async with b.engine.connect() as conn:  # what a database restart does to the listening connection
        await conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN%'"
            )
        )
    await asyncio.sleep(0.5)
    await b.admin.forget_member(GUILD, ALICE)  # only a NOTIFY can tell a within the hour
    async with asyncio.timeout(30):
        while "bees" in (await a.facts.cached(GUILD, ALICE) or ""):  # noqa: ASYNC110 - polling what another process changes
            await asyncio.sleep(0.1)
