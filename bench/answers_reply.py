"""The answer benchmark's Elefant side: the guild stored and embedded as `python -m bot import` and the bot store it,
the configured model built as the bot builds it, and each question asked through the bot's own reply path.

A member writes "Elefant, <question>" in the general channel; the message is stored as the listener stores it, the
responder the composition root wires (`bot.app.responder_for`, a question about the past phrased by the model)
answers it, and the answer is stored as the bot's replies are, as bench/conversation_e2e.py asks. Every model call is
an `llm_calls` row (bot/llm/usage.py); `Meter` keeps them as they are recorded, for the calls and tokens per path.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.common import sqlite_engine
from bench.conversation_guild import Question
from bench.conversations import Conversation, write_exports
from bot.app import responder_for
from bot.importer import import_file
from bot.llm.build import build_embedder, build_llm
from bot.llm.client import LLM
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage, Kind
from bot.reply.routing import Request, address, stored_kind
from bot.settings import Settings
from db.engine import create_session_factory

BOT_ID = 1 << 59
SOURCES = "\n\nSources:\n"  # what follows a recall answer: the cited messages, not the model's answer


@dataclass
class Meter:
    """Every `llm_calls` row as the usage recorder records it (`UsageRecorder.observe`)."""

    rows: list[Mapping[str, Any]] = field(default_factory=list)

    def __call__(self, row: Mapping[str, Any]) -> None:
        self.rows.append(row)

    def since(self, start: int) -> Cost:
        """What the calls recorded after the first `start` rows cost."""
        return Cost.of(self.rows[start:])


@dataclass(frozen=True)
class Cost:
    """Model calls answered (by the model, or offline after it failed), tokens, and calls per operation."""

    calls: int
    tokens_in: int
    tokens_out: int
    failed: int  # calls the model failed or skipped (each then answered offline, counted in `calls` too)
    offline: int  # calls the offline provider answered
    operations: Mapping[str, int]

    @classmethod
    def of(cls, rows: list[Mapping[str, Any]]) -> Cost:
        answered = [r for r in rows if r["outcome"] in {"ok", "fallback"}]
        return cls(
            len(answered),
            sum(r["tokens_in"] for r in answered),
            sum(r["tokens_out"] for r in answered),
            sum(r["outcome"] in {"error", "skipped"} for r in rows),
            sum(r["provider"] == "offline" for r in answered),
            dict(Counter(r["operation"] for r in answered)),
        )


@dataclass(frozen=True)
class Replied:
    """What the bot answered one question: the model's answer (sources cut off), the route, the seconds it took."""

    text: str
    route: str
    seconds: float


def addressed(question: Question) -> tuple[str, str]:
    """The message a member writes ("Elefant, …" unless it names the bot already), and its text once the address
    is removed, as the reply path reads it."""
    text = question.text if "elefant" in question.text.lower() else f"Elefant, {question.text}"
    return text, address(text, bot_user_id=BOT_ID, bot_name="Elefant", replied_to_bot=False) or text


async def build(conv: Conversation, database: Path, settings: Settings, *, exports: Path) -> None:
    """Store the guild in `database` through the importer (its files written in `exports`), and embed it with the
    embedder settings choose. Built under another name and renamed once done, so a run cut short leaves no half
    guild for `--reuse` to take for a whole one."""
    building = database.with_name(database.name + ".building")
    building.unlink(missing_ok=True)
    async with sqlite_engine(database.parent, reuse=building) as engine:
        llm = build_llm(settings, sessions=None)  # nothing is asked of the model here (a Gemini embedder uses it)
        embedder = build_embedder(settings, llm)
        memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(conv.now), embedder=embedder)
        try:
            await memory.start(background=False)
            for path in write_exports(conv, exports):
                await import_file(memory, path, include_bots=False, progress=False)
            if memory.embedding is not None:
                memory.embedding.start()
                await memory.embedding.idle()
            await memory.flush()
        finally:
            await memory.close()
            await llm.close()
            if close := getattr(embedder, "close", None):
                close()
    building.rename(database)


@contextlib.asynccontextmanager
async def opened(
    conv: Conversation, directory: Path, settings: Settings, *, reuse: Path | None = None
) -> AsyncIterator[tuple[MemoryManager, LLM, Meter]]:
    """The guild's memory on the configured model, its calls metered. `reuse`: a database built earlier (else built
    there first); a copy of it is asked, so the questions and answers stored do not pile up in it."""
    database = reuse or directory / "guild.db"
    if not database.exists():
        await build(conv, database, settings, exports=directory / "exports")
    if reuse is not None:
        database = Path(shutil.copy(reuse, directory / "asked.db"))
    meter = Meter()
    async with sqlite_engine(directory, reuse=database) as engine:
        llm = build_llm(settings, sessions=create_session_factory(engine))
        assert llm.usage is not None
        llm.usage.observe(meter)
        embedder = build_embedder(settings, llm)
        memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(conv.now), embedder=embedder)
        try:
            await memory.start(background=False)
            if memory.embedding is not None:  # the vector index, loaded as a bot loads it at start
                memory.embedding.start()
                await memory.embedding.idle()
            yield memory, llm, meter
        finally:
            await memory.close()
            await llm.close()
            if close := getattr(embedder, "close", None):
                close()


class Member:
    """Asks the bot as a member would, through the reply path the composition root wires."""

    def __init__(self, memory: MemoryManager, llm: LLM, conv: Conversation) -> None:
        self._memory = memory
        self._conv = conv
        self._responder = responder_for(memory, llm, memory.settings, model_answers_recall=True)
        self._general = conv.channels[0].id
        self._ids = itertools.count(int(conv.planted[-1].message_id) + (1 << 30))
        self._names = {m.id: m.name for m in conv.members}

    async def ask(self, question: Question) -> Replied:
        """Say the question, let the bot answer it and store the answer, as the listener does."""
        text, bare = addressed(question)
        said = self._line(question.asker_id, text, stored_kind(bare))
        await self._memory.intake.message(said)
        await self._memory.flush()
        request = Request(
            self._conv.guild_id,
            question.asker_id,
            bare,
            channel_id=self._general,
            message_id=said.message_id,
            bot_user_id=BOT_ID,
        )
        started = time.perf_counter()
        answer = await self._responder.respond(request)
        seconds = time.perf_counter() - started
        reply = self._line(BOT_ID, answer.text, Kind.BOT, reply_to=said.message_id)
        await self._memory.intake.reply(reply, members=answer.members, messages=answer.quoted)
        return Replied(answer.text.split(SOURCES, 1)[0], answer.route.value, seconds)

    async def ask_all(self, questions: list[Question]) -> list[Replied]:
        """Every question in turn (each sees the earlier ones and their answers in the channel, as members do)."""
        return [await self.ask(q) for q in tqdm(questions, desc="Elefant", leave=False)]

    def _line(self, author: int, text: str, kind: Kind, reply_to: int | None = None) -> IncomingMessage:
        clock = self._memory.clock
        assert isinstance(clock, FakeClock)
        clock.advance(seconds=20)
        name = "Elefant" if author == BOT_ID else self._names.get(author, "member")
        return IncomingMessage(
            self._conv.guild_id, self._general, next(self._ids), author, name, text, clock.now(),
            reply_to_id=reply_to, kind=kind,
        )  # fmt: skip
