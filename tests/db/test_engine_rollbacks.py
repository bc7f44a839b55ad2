"""SQLite sessions end without a trip to the connection's thread when there is nothing to roll back."""

from __future__ import annotations

import aiosqlite
import pytest
from sqlalchemy import text

from db.engine import create_engine, create_session_factory


@pytest.fixture
def driver_rollbacks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each rollback that reached aiosqlite's connection thread: whether a transaction was open."""
    calls: list[bool] = []
    original = aiosqlite.Connection.rollback

    async def rollback(self: aiosqlite.Connection) -> None:
        calls.append(self.in_transaction)
        await original(self)

    monkeypatch.setattr(aiosqlite.Connection, "rollback", rollback)
    return calls


async def test_reads_end_without_a_rollback_and_an_unfinished_write_is_still_rolled_back(tmp_path, driver_rollbacks):
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/rollbacks.db")
    sessions = create_session_factory(engine)
    try:
        async with sessions() as session:
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
            await session.commit()
        driver_rollbacks.clear()
        for _ in range(3):
            async with sessions() as session:  # a session's end and the pool's reset: nothing open after reads
                assert (await session.execute(text("SELECT count(*) FROM t"))).scalar() == 0
        assert driver_rollbacks == []
        async with sessions() as session:
            await session.execute(text("INSERT INTO t VALUES (1)"))  # never committed
        assert driver_rollbacks == [True]
        async with sessions() as session:
            assert (await session.execute(text("SELECT count(*) FROM t"))).scalar() == 0
    finally:
        await engine.dispose()
