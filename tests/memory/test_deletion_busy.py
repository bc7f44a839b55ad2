"""A forget-me that meets a busy PostgreSQL (bot/memory/admin.py with db/busy.py): chosen as the victim of a real
deadlock with another process's transaction, it runs again and deletes everything; the command line that stays
behind a lock says one sentence, without ids, and exits 1, and deletes it all when run again."""

from __future__ import annotations

import asyncio
import threading

import asyncpg
import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from bot.app import open_app
from bot.cli import main
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.settings import load_settings
from db import busy, changes
from db import engine as engines
from db.engine import create_engine
from db.models import ChatMessage
from tests.factories import ALICE, BOB, GUILD, T0, message


def pg_only(db_url: str) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer: a deletion waits for the file, it cannot deadlock")


def dsn(db_url: str) -> str:
    return db_url.replace("postgresql+asyncpg", "postgresql")


async def alices(engine) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).where(ChatMessage.user_id == ALICE)) or 0)


async def test_a_forget_me_picked_by_a_deadlock_runs_again_and_deletes_everything(db_url, settings):
    pg_only(db_url)
    engine = create_engine(db_url)
    memory = MemoryManager(engine, settings, clock=FakeClock(T0))
    await memory.start()
    try:
        said = [message(f"alice {i}", at=T0) for i in range(5)] + [message("bob", author=BOB, name="bob", at=T0)]
        for op in said:
            await memory.intake.message(op)
        await memory.flush()
        other = await asyncpg.connect(dsn(db_url))  # another process, in the middle of its own transaction
        try:
            async with other.transaction():
                await other.execute("SELECT 1 FROM chat_history WHERE message_id = $1 FOR UPDATE", said[2].message_id)
                forgetting = asyncio.ensure_future(memory.admin.forget_member(GUILD, ALICE))
                await asyncio.sleep(0.3)  # it holds the guild's lock and waits for the row
                key, guild = changes.guild_lock_key(GUILD)
                # The other transaction now wants the guild: each waits for the other. PostgreSQL ends the one that
                # waited first (its deadlock check runs first): the forget-me.
                await other.execute("SELECT pg_advisory_xact_lock_shared($1, $2)", key, guild)
            counts = await asyncio.wait_for(forgetting, 30)
        finally:
            await other.close()
        assert counts["chat_history"] == 5
        assert await alices(engine) == 0
    finally:
        await memory.close()
        await engine.dispose()


def hold_guild(db_url: str, held: threading.Event, release: threading.Event) -> None:
    """Another process holding the guild's lock (a long deletion, or one frozen mid-transaction)."""

    async def hold() -> None:
        conn = await asyncpg.connect(dsn(db_url))
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1, $2)", *changes.guild_lock_key(GUILD))
                held.set()
                await asyncio.to_thread(release.wait, 60)
        finally:
            await conn.close()

    asyncio.run(hold())


def test_a_forget_me_from_the_command_line_that_stays_busy_is_one_sentence(db_url, monkeypatch, tmp_path):
    pg_only(db_url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "none")
    monkeypatch.setattr(busy, "ATTEMPTS", 2)  # the deletion's own retries, shortened with its lock waits
    monkeypatch.setattr(engines, "PG_SERVER_SETTINGS", {**engines.PG_SERVER_SETTINGS, "lock_timeout": "200ms"})

    async def seed() -> None:
        async with open_app(load_settings()) as app:
            for i in range(3):
                await app.memory.intake.message(message(f"alice {i}", at=T0), wait=True)

    asyncio.run(seed())
    held, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_guild, args=(db_url, held, release))
    holder.start()
    try:
        assert held.wait(30)
        result = CliRunner().invoke(main, ["purge", "--guild", str(GUILD), "--user", str(ALICE), "--yes"])
    finally:
        release.set()
        holder.join(30)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert lines[0].startswith("Nothing was deleted: the database was busy or away"), lines
    assert str(GUILD) not in result.output and str(ALICE) not in result.output  # no ids, no SQL
    again = CliRunner().invoke(main, ["purge", "--guild", str(GUILD), "--user", str(ALICE), "--yes"])
    assert again.exit_code == 0 and again.output.startswith("Deleted: 3 messages"), again.output
