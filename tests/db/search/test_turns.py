"""SQLite's planner on recall's reads, with the statistics a real guild gives it: indexes, never a scan."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from db import statistics
from db.engine import create_engine
from db.search import turns as store
from db.search.types import Turn
from tests.factories import ALICE, CHANNEL, GUILD, T0

MESSAGES = 3_000


@pytest.fixture(params=[0, 10, 100], ids=["no replies", "one in ten a reply", "one in a hundred"])
async def analysed(sqlite_template: Path, tmp_path: Path, request: pytest.FixtureRequest):
    """A guild of MESSAGES messages, some replies (a new guild, or an export, may have none), with the
    statistics `db.statistics.refresh` keeps."""
    every = request.param
    path = tmp_path / "plans.db"
    shutil.copy(sqlite_template, path)
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    base = 2**60 + 50_000_000
    turns = [
        Turn(
            base + i,
            CHANNEL + i % 6,
            ALICE + i % 40,
            f"message number {i}",
            T0 - timedelta(minutes=MESSAGES - i),
            base + i - 3 if every and i % every == every - 1 else None,
        )
        for i in range(MESSAGES)
    ]
    rows = [
        {
            "id": t.message_id,
            "guild": GUILD,
            "channel": t.channel_id,
            "user": t.user_id,
            "body": t.text,
            "at": t.at.replace(tzinfo=None).isoformat(" ", "microseconds"),
            "reply": t.reply_to_id,
        }
        for t in turns
    ]
    async with engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO chat_history (message_id, guild_id, channel_id, user_id, message_text, timestamp, "
                "reply_to_id) VALUES (:id, :guild, :channel, :user, :body, :at, :reply)"
            ),
            rows,
        )
    await statistics.refresh(engine)
    yield engine, turns
    await engine.dispose()


async def plans_of(engine, monkeypatch, read) -> list[str]:
    """The query plan of each statement `read(session)` sends through SQLite's driver."""
    sent: list[tuple[str, object]] = []
    original = aiosqlite.Connection.execute_fetchall

    async def recording(self, sql, parameters=None):
        sent.append((sql, parameters))
        return await original(self, sql, parameters)

    monkeypatch.setattr(aiosqlite.Connection, "execute_fetchall", recording)
    async with engine.connect() as connection, AsyncSession(bind=connection) as session:
        await read(session)
    monkeypatch.setattr(aiosqlite.Connection, "execute_fetchall", original)
    assert sent, "the read went through the driver"
    plans = []
    async with engine.connect() as connection:
        driver = (await connection.get_raw_connection()).driver_connection
        for sql, parameters in sent:
            plans.append(
                "\n".join(row[3] for row in await driver.execute_fetchall(f"EXPLAIN QUERY PLAN {sql}", parameters))
            )
    return plans


@pytest.mark.parametrize("hits", [1, 3, 12])
async def test_the_turns_around_hits_are_looked_up_not_scanned(analysed, monkeypatch, hits):
    """around(): the messages beside each hit, the replies to it and what it replies to. Its sources OR-ed in
    one WHERE, and a replies index full of NULLs, made SQLite scan the guild (7–14 ms at 100,000 messages)."""
    engine, turns = analysed
    chosen = [turns[i] for i in range(50, MESSAGES, MESSAGES // hits)][:hits]
    assert any(t.reply_to_id is None for t in chosen)

    async def read(session) -> None:
        found = await store.around(session, GUILD, chosen, here=CHANNEL, neighbours=10)
        assert {t.message_id for t in found} >= {chosen[0].message_id - 6, chosen[0].message_id + 6} - {
            t.message_id for t in chosen
        }

    (plan,) = await plans_of(engine, monkeypatch, read)
    scans = [line for line in plan.splitlines() if line.startswith("SCAN") and "CONSTANT ROW" not in line]
    assert not scans, plan
