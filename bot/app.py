"""Assembling the bot: open long-lived resources with `async with`, wire them, drain on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from bot import collector as collection
from bot.lifecycle import spawn, stop_on_signals
from bot.llm import LLM, build_embedder, build_llm
from bot.llm.types import Provider
from bot.memory.clock import Clock
from bot.memory.manager import MemoryManager
from bot.metrics.server import serve_metrics
from bot.reply.model_turns import ModelTurns
from bot.reply.respond import Responder
from bot.settings import ConfigError, Settings
from db.engine import create_engine, create_session_factory
from db.migrate import upgrade
from db.single_writer import DatabaseInUseError, sole_writer

log = logging.getLogger(__name__)


@dataclass
class App:
    """Everything a front end needs: memory, the LLM and the responder."""

    memory: MemoryManager
    llm: LLM
    responder: Responder


@contextlib.asynccontextmanager
async def open_app(
    settings: Settings, *, clock: Clock | None = None, background: bool = False, offline: Provider | None = None
) -> AsyncIterator[App]:
    """Migrate, open the engine and the LLM client, start memory; close all of it (draining) on exit.

    `offline`: the offline provider the LLM answers with when no model is configured or it fails (by default the
    deterministic one; `python -m bot prompt` wraps it to record what the model would receive).

    `background`: long-running front ends (the bot, the console) also embed messages and summarise finished
    days in the background, and on SQLite they hold the database's single-writer lock: a second bot on the
    same file ends with one sentence (a ConfigError), while short commands go on working beside it.
    """
    with contextlib.ExitStack() as held:
        if background:
            try:
                held.enter_context(sole_writer(settings.database_url))
            except DatabaseInUseError as exc:
                raise ConfigError(str(exc)) from None
        async with _opened(settings, clock=clock, background=background, offline=offline) as app:
            yield app


def responder_for(
    memory: MemoryManager, llm: LLM, settings: Settings, *, model_answers_recall: bool | None = None
) -> Responder:
    """The reply, wired to memory's faces and the model: routing and chat by the model, a question about the past
    phrased by it too when there is one (`model_answers_recall`; offline the bot lists what it found)."""
    turns = ModelTurns(llm, memory.directory, settings)
    phrased = not llm.is_offline if model_answers_recall is None else model_answers_recall
    return Responder(
        memory.facts,
        memory.recollection,
        memory.directory,
        router=turns.route,
        chatter=turns.chat,
        policy=settings.facts_policy,
        recall_chatter=turns.chat if phrased else None,
        storage=memory.storage,
    )


@contextlib.asynccontextmanager
async def _opened(
    settings: Settings, *, clock: Clock | None, background: bool, offline: Provider | None
) -> AsyncIterator[App]:
    engine = create_engine(settings.database_url)
    try:
        await upgrade(engine)
        llm = build_llm(settings, sessions=create_session_factory(engine), offline=offline)
        try:  # the model's HTTP session is open from here
            embedder = build_embedder(settings, llm, required=background)
            storage = llm.usage.storage if llm.usage is not None else None  # one storage fault for both
            memory = MemoryManager(engine, settings, llm=llm, clock=clock, embedder=embedder, storage=storage)
            await memory.start(background=background, schedule=background)
            if background:
                # What start-up loaded (modules, the model's vocabulary, discord.py) lives as long as the process;
                # a full collection walked all ~230,000 of those objects and stopped the event loop for ~110 ms
                # (bench.reply), so they are moved out of the collector's sight.
                gc.freeze()
            responder = responder_for(memory, llm, settings)
            # Full collections wait for a moment without a reply (bot/collector.py).
            collector = collection.start(memory.replies.between) if background else None
            try:
                yield App(memory, llm, responder)
            finally:
                try:
                    # Facts changes that outlived a reply deadline get one request's time to finish before memory
                    # closes.
                    await responder.drain(settings.llm_timeout_seconds)
                finally:
                    await collection.stop(collector)
                await memory.close()
                if close_embedder := getattr(embedder, "close", None):
                    close_embedder()
        finally:
            await llm.close()
    finally:
        await engine.dispose()


async def _retention(memory: MemoryManager) -> None:
    """Apply RETENTION_DAYS once an hour while the bot runs."""
    while True:
        deleted = await memory.admin.apply_retention()
        if deleted:
            log.info("retention removed %s", dict(deleted))
        await asyncio.sleep(3600)


async def run_discord(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    """Connect to Discord until `stop` is set (by default: SIGINT/SIGTERM), then drain ingestion before exiting.

    Start-up failures (a refused token, a privileged intent switched off, no network) propagate to the
    caller, which turns them into one sentence.
    """
    from bot.discord_bot import make_bot  # discord.py takes a while to import; only the bot needs it

    assert settings.discord_token is not None
    restore_signals: Callable[[], None] = lambda: None  # noqa: E731 - the default undo does nothing
    if stop is None:
        stop = asyncio.Event()
        restore_signals = stop_on_signals(stop)
    async with open_app(settings, background=True) as app:
        bot = make_bot(memory=app.memory, responder=app.responder, settings=settings)
        retention = spawn(_retention(app.memory), name="retention")
        try:
            async with bot, serve_metrics(settings, app, gateway=bot.connected):
                runner = asyncio.create_task(bot.start(settings.discord_token.get_secret_value()))
                stopper = asyncio.create_task(stop.wait())
                done, _ = await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
                if runner in done:
                    runner.result()  # a login or connection failure surfaces here
                await bot.close()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner
        finally:
            retention.cancel()
            restore_signals()
        log.info("disconnected; draining what was received")
