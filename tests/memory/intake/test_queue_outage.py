"""Storage away during a burst, on both databases: ingest_message never waits, every message is stored after,
and the log says so in a handful of lines (down, spilling, back, caught up), a lock that holds writes included.

The outage lasts OUTAGE_SECONDS (env ELEFANT_OUTAGE_SECONDS, default 2; the issue's figure is 30). Two kinds
each: the chat table locked by another transaction (writes hang), and storage gone (SQLite: the table renamed
away, so writes fail; PostgreSQL: the database refuses connections and the open ones are terminated).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.memory.manager import MemoryManager
from bot.settings import Settings
from db.models import ChannelPrivacy, ChatMessage
from tests.conftest import PG_BASE_URL
from tests.factories import CHANNEL, GUILD, message
from tests.steps import at_once

OUTAGE_SECONDS = float(os.environ.get("ELEFANT_OUTAGE_SECONDS", "2"))
STUCK_SECONDS = OUTAGE_SECONDS / 4
THREAD = CHANNEL + 1


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def chat_table_locked(db_url: str, engine: AsyncEngine) -> AsyncIterator[None]:
    """Another transaction holds the lock every write needs, as a long migration or a backup would."""
    if db_url.startswith("sqlite"):
        holder = sqlite3.connect(make_url(db_url).database, isolation_level=None, timeout=30)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return
    holder = await asyncpg.connect(_dsn(db_url))
    transaction = holder.transaction()
    await transaction.start()
    await holder.execute("LOCK TABLE chat_history IN ACCESS EXCLUSIVE MODE")
    try:
        yield
    finally:
        await transaction.rollback()
        await holder.close()


@contextlib.asynccontextmanager
async def storage_gone(db_url: str, engine: AsyncEngine) -> AsyncIterator[None]:
    """SQLite: the table is not there; PostgreSQL: the server refuses the database and drops its connections."""
    if db_url.startswith("sqlite"):
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE chat_history RENAME TO chat_history_away"))
        try:
            yield
        finally:
            async with engine.begin() as conn:
                await conn.execute(text("ALTER TABLE chat_history_away RENAME TO chat_history"))
        return
    name = make_url(db_url).database
    admin = await asyncpg.connect(_dsn(PG_BASE_URL))
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        try:
            yield
        finally:
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    finally:
        await admin.close()


@pytest.mark.parametrize("outage", [chat_table_locked, storage_gone], ids=["locked", "gone"])
async def test_ingest_never_waits_while_storage_is_away_and_everything_is_stored_after(
    outage, db_url, engine, tmp_path, monkeypatch, caplog
):
    monkeypatch.chdir(tmp_path)  # the spill files go to ./data
    settings = Settings(_env_file=None, database_url=db_url, ingest_queue_max=500, ingest_flush_ms=20)  # type: ignore[call-arg]
    manager = MemoryManager(engine, settings)
    manager.queue.committer.stuck_seconds = STUCK_SECONDS  # the shipped 10 s, scaled to the outage's length
    await manager.start()
    sent: list[int] = []
    lag = 0.0

    async def burst(seconds: float) -> None:
        nonlocal lag
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(40):
                m = message(f"burst {len(sent)}")
                at_once(manager.intake.message(m))  # it never waits, for storage or anything else
                sent.append(m.message_id)
            began = time.perf_counter()
            await asyncio.sleep(0.005)  # the gateway's pace; and the rest of the bot gets the loop
            lag = max(lag, time.perf_counter() - began - 0.005)

    await burst(0.3)
    await manager.flush()
    caplog.set_level(logging.INFO)
    async with outage(db_url, engine):
        written_before = manager.queue.stats.written
        # A private thread first seen now: its rule must not wait for storage either.
        at_once(
            manager.intake.channel(GUILD, THREAD, is_private=True, parent_id=CHANNEL, channel_type="private_thread")
        )
        in_thread = message("in the private thread", channel=THREAD)
        at_once(manager.intake.message(in_thread))
        await burst(OUTAGE_SECONDS)
        assert manager.queue.stats.written == written_before, "the outage should have stopped every write"
        assert manager.queue.stats.overflowed > 0 and list((tmp_path / "data").glob("ingest-spill-*.jsonl"))
    await burst(0.3)  # storage is back, and busy catching up: new messages still go in line behind the old
    await asyncio.wait_for(manager.flush(), 60)
    for _ in range(600):  # every source that held storage down has worked again (a hang guard of 30 s)
        if not manager.storage.down:
            break
        await asyncio.sleep(0.05)
    lines = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.INFO]
    async with engine.connect() as conn:
        stored = set((await conn.scalars(select(ChatMessage.message_id))).all())
        private = await conn.scalar(select(ChannelPrivacy.is_private).where(ChannelPrivacy.channel_id == THREAD))
    await manager.close()

    # A hang guard, not a speed: a blocking wait for the away storage on the loop (a lock's or a connection's
    # time-out) would stop it for seconds; a loaded machine's scheduling stalls it for a fraction of one.
    assert lag < 5, f"the event loop stalled for {lag * 1000:.0f} ms"
    assert len(sent) > 2000
    assert stored == {*sent, in_thread.message_id}
    assert private is True
    assert manager.queue.stats.spilled == 0
    assert list((tmp_path / "data").glob("ingest-spill-*.jsonl")) == []  # removed once written
    # What a person reads: storage down (with the cause: a write held by a lock says how long it waited), the
    # overflow going to disk, storage back, caught up — not a line per retried batch.
    assert len(lines) <= 5, lines
    [down] = [line for line in lines if "storage down" in line]
    [back] = [line for line in lines if "storage back after" in line]
    assert "StuckWrite: a write has waited" in down if outage is chat_table_locked else "StuckWrite" not in down
    assert "operations held meanwhile" in back
