"""bench.snapshot on both databases: the copy holds what was there when it was taken, not what came after, while
a connection to the living database stays open (a bot's LISTEN, its pool), and it is gone afterwards."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select

from bench import snapshot
from db.engine import create_engine
from db.models import UserFacts

COUNT = select(func.count()).select_from(UserFacts)
ADD = insert(UserFacts).values(guild_id=1, memory_blob="likes tea", updated_at=datetime(2026, 1, 1, tzinfo=UTC))


async def test_a_kept_copy_holds_what_was_there_then_and_is_gone_afterwards(engine, tmp_path: Path):
    async with engine.begin() as conn:
        await conn.execute(ADD.values(user_id=1))
    async with engine.connect() as held, snapshot.kept(engine, tmp_path) as url:  # held open, as the bot's LISTEN
        assert await held.scalar(COUNT) == 1
        async with engine.begin() as conn:  # the living database goes on
            await conn.execute(ADD.values(user_id=2))
            assert await conn.scalar(COUNT) == 2
        copy = create_engine(url)
        try:
            async with copy.connect() as conn:
                assert await conn.scalar(COUNT) == 1
        finally:
            await copy.dispose()
    gone = create_engine(url)
    try:
        with pytest.raises(Exception):  # noqa: B017  # no such database, or (SQLite) a new empty file
            async with gone.connect() as conn:
                await conn.scalar(COUNT)
    finally:
        await gone.dispose()
