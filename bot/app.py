"""Assembling the bot: open long-lived resources with `async with`, wire them, drain on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bot.discord_bot import ElefantBot
from bot.lifecycle import spawn, stop_on_signals
from bot.llm import LLM, build_embedder, build_llm
from bot.memory.clock import Clock
from bot.memory.manager import MemoryManager
from bot.model_turns import ModelTurns
from bot.responder import Responder
from bot.settings import Settings
from db.engine import create_engine, create_session_factory
from db.migrate import upgrade

log = logging.getLogger(__name__)


@dataclass
class App:
    """Everything a front end needs: memory, the LLM and the responder."""

    memory: MemoryManager
    llm: LLM
    responder: Responder


@contextlib.asynccontextmanager
async def open_app(settings: Settings, *, clock: Clock | None = None) -> AsyncIterator[App]:
    """Migrate, open the engine and the LLM client, start memory; close all of it (draining) on exit."""
    engine = create_engine(settings.database_url)
    try:
        await upgrade(engine)
        llm = build_llm(settings, sessions=create_session_factory(engine))
        memory = MemoryManager(engine, settings, llm=llm, clock=clock, embedder=build_embedder(settings, llm))
        await memory.start()
        turns = ModelTurns(llm, memory, settings)
        responder = Responder(
            memory,
            router=turns.route,
            chatter=turns.chat,
            policy=settings.facts_policy,
            recall_chatter=None if llm.is_offline else turns.chat,
        )
        try:
            yield App(memory, llm, responder)
        finally:
            await memory.close()
            await llm.close()
    finally:
        await engine.dispose()


async def _retention(memory: MemoryManager) -> None:
    """Apply RETENTION_DAYS once an hour while the bot runs."""
    while True:
        deleted = await memory.apply_retention()
        if deleted:
            log.info("retention removed %s", dict(deleted))
        await asyncio.sleep(3600)


async def run_discord(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    """Connect to Discord until `stop` is set (by default: SIGINT/SIGTERM), then drain ingestion before exiting."""
    assert settings.discord_token is not None
    if stop is None:
        stop = asyncio.Event()
        stop_on_signals(stop)
    async with open_app(settings) as app:
        bot = ElefantBot(memory=app.memory, responder=app.responder, settings=settings)
        async with bot:
            spawn(_retention(app.memory), name="retention")
            runner = asyncio.create_task(bot.start(settings.discord_token.get_secret_value()))
            stopper = asyncio.create_task(stop.wait())
            done, _ = await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if runner in done:
                runner.result()  # a login failure surfaces here
            await bot.close()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
        log.info("disconnected; draining what was received")
