"""Spans the listener, the memory layer and bot/faults.py on purpose: a database outage during a burst of
messages, through dpytest and a private PostgreSQL server stopped and started under the bot, read as a person
reads the log — a handful of lines that say what happened — and as the members read the replies: no apology
while memory still has something to say."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import discord.ext.test as dpytest
import pytest
from sqlalchemy import func, select

from bot.app import open_app
from bot.cogs.listener import APOLOGY
from bot.discord_bot import ElefantBot
from bot.reply.deadline import AWAY
from db.engine import create_engine, create_session_factory
from db.models import ChatMessage
from fakes.gemini_stub import GeminiStub
from tests.discord.test_listener_deadline import next_message
from tests.private_postgres import PrivateServer
from tests.reply.test_deadline import settings_for

OUTAGE_SECONDS = 4.0
BURST = 200
NOISY = ("discord", "httpx", "google_genai", "aiosqlite", "alembic", "faiss")
HANDFUL = 8  # down, (still down), spill, back, caught up: what a person needs, not a line per attempt


@pytest.fixture
async def bot(private_postgres: PrivateServer, stub: GeminiStub, tmp_path: Path):
    settings = settings_for(
        private_postgres.url,
        stub.base_url,
        embedding_model="none",
        discord_members_intent=True,
        data_dir=tmp_path,
        ingest_queue_max=50,  # the outage overflows to a spill file too, as a long one would
    )
    async with open_app(settings) as app:
        bot = ElefantBot(memory=app.memory, responder=app.responder, settings=settings, sync_commands=False)
        dpytest.configure(bot, members=["alice", "bob"])
        await bot._async_setup_hook()
        await bot.setup_hook()
        yield bot
        await dpytest.empty_queue()


async def outage(server: PrivateServer, seconds: float) -> None:
    await asyncio.to_thread(server.stop)
    await asyncio.sleep(seconds)
    await asyncio.to_thread(server.start)


async def stored(url: str) -> int:
    engine = create_engine(url)
    try:
        async with create_session_factory(engine)() as session:
            return int((await session.execute(select(func.count()).select_from(ChatMessage))).scalar_one())
    finally:
        await engine.dispose()


async def test_a_database_outage_during_a_burst_is_a_handful_of_lines_and_no_apology(
    bot, private_postgres: PrivateServer, caplog
):
    alice, bob = dpytest.get_config().members
    guild = dpytest.get_config().guilds[0]
    name = alice.display_name
    await bot.memory.facts.remember(guild.id, alice.id, f"{name} likes green tea", requested_by=alice.id)
    # About her (first person): her context is read for it, so a reply meets the outage. Built here: warm.
    await dpytest.message(f"<@{bot.user.id}> how am I doing today?", member=alice)
    await next_message()
    await bot.memory.flush()

    caplog.clear()
    for noisy in NOISY:  # as bot/logging_setup.py runs the bot
        caplog.set_level(logging.WARNING, logger=noisy)
    caplog.set_level(logging.INFO)  # last: it sets the capturing handler's level too
    down = asyncio.create_task(outage(private_postgres, OUTAGE_SECONDS))
    replies: list[str] = []
    for i in range(BURST):
        await dpytest.message(f"line {i}: the weather turned again", member=bob)
        if i % 25 == 10:
            await dpytest.message(f"<@{bot.user.id}> how am I doing today?", member=alice)
            replies.append((await next_message()).content)
        await asyncio.sleep(0.04)
    await down
    await asyncio.wait_for(bot.memory.flush(), timeout=60)  # a hang guard: the queue's backoff is at most 5 s
    for _ in range(600):  # every source that held storage down has worked again (a hang guard of 30 s)
        if not bot.memory.storage.down:
            break
        await asyncio.sleep(0.05)

    lines = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.INFO]
    print("\n".join(lines))
    assert len(lines) <= HANDFUL, lines
    assert sum("storage down" in line for line in lines) == 1, lines
    [back] = [line for line in lines if "storage back after" in line]
    assert "replies from caches" in back and "operations held meanwhile" in back, back
    assert sum(r.exc_info is not None for r in caplog.records) <= 2  # one per new kind of cause
    assert APOLOGY not in replies
    from_memory = [reply for reply in replies if reply.startswith(AWAY)]
    assert from_memory, replies  # some replies met the outage
    assert all(f"{name} likes green tea" in reply for reply in from_memory), from_memory
    assert await stored(private_postgres.url) >= BURST + 2  # everything said during the outage is stored
