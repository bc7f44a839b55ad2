"""A year of a busy guild with the bot answering every day: does memory stay as fast and as clean as it was fresh?

The guild (bench/soak_guild.py) imports its history, then lives 12 months through the bot's own paths: every
message goes through intake as the listener hands it over, one in twenty is written to the bot and answered by the
real reply path offline (`Responder.respond`: routing, the author's context, recall, the chat prompt; the offline
provider phrases the answer) and the answer is stored as the listener stores it, with its sources; each finished
day is summarised as the scheduler does; statistics, embedding, caches and garbage collection run as in the bot.
At months 1, 3, 6 and 12 the soak stops the clock and measures:

- recall p50/p99: a fixed set of questions (the same at every checkpoint), each recalled as a reply recalls it;
- reply p50/p99: every answer given to the guild since the previous checkpoint;
- found (wait) / found (no wait): of the questions planted for the checkpoint (bench/soak_guild.py: newest evidence
  2-6 weeks back, "weeks", and 3-7 months back, "months"), the share whose evidence all reached the model's prompt,
  at the default MEMORY_WAIT_SECONDS and with memory allowed all the time it takes;
- bytes per member message: the database's size over the members' messages it holds (the bot's own rows — the
  questions to it, its answers, their sources — counted beside it);
- resident memory per stored message: the process's growth since the start over the messages stored;
- rows per reply (the question, the answer and its sources) and summary rows per day lived.

    python -m bench.soak                          # SQLite and PostgreSQL, ~180,000 messages (16-30 min each)
    python -m bench.soak --messages 20000 --sqlite-only
    python -m bench.soak --postgres-only         # one database at a time (--sqlite-only, --postgres-only)
    python -m bench.soak --no-answers            # the control: the same guild, the bot never answering
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bench import snapshot
from bench.common import postgres_engine, print_table, sqlite_engine
from bench.conversation_guild import Message, snowflake
from bench.conversations import Conversation, write_exports
from bench.embedding_cache import CachedEmbedder
from bench.soak_guild import (
    CHECKPOINTS,
    LIVES_FROM,
    TELLINGS,
    Asked,
    History,
    addressed_text,
    checkpoint_at,
    lived,
    soak_guild,
)
from bot import collector as collection
from bot.app import responder_for
from bot.importer import import_file
from bot.llm.client import LLM
from bot.llm.offline import OfflineProvider
from bot.llm.prompts import load_prompts
from bot.llm.recording import RecordingProvider
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage, Kind
from bot.reply.respond import Responder
from bot.reply.routing import Request, address, stored_kind
from bot.settings import Settings
from db.engine import create_engine

BOT_ID = 1 << 59
# The fixed questions recall is timed with at every checkpoint: with 40, "p99" was the slowest one, and which one that
# was changed from run to run (a hiccup of the machine, not of the guild); 200 make it the second slowest.
PROBES = 200
PAGE = os.sysconf("SC_PAGE_SIZE")
DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"


def rss() -> int:
    """This process's resident memory, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def probe_texts() -> list[str]:
    """The questions recall is timed with at every checkpoint, as the bot reads them (its name taken off)."""
    rng = random.Random("soak-probes")
    return [
        address(addressed_text(rng), bot_user_id=BOT_ID, bot_name="Elefant", replied_to_bot=False) or ""
        for _ in range(PROBES)
    ]


async def ask_in_turn(
    memories: Sequence[MemoryManager],
    guild_id: int,
    channel_id: int,
    questions: list[str],
    around: Callable[[int], contextlib.AbstractContextManager[object]] = lambda _: contextlib.nullcontext(),
) -> list[list[float]]:
    """Each question's recall timed in every memory in turn, which goes first alternating (this machine's pace
    drifts by a third within minutes): per memory, the seconds of each; `around(i)`: what each asking of the i-th
    memory runs in."""
    took: list[list[float]] = [[] for _ in memories]
    order = range(len(memories))
    for n, question in enumerate(questions):
        for i in order if n % 2 == 0 else reversed(order):
            # As a reply holds it (bot/cogs/listener.py), in every memory the collector asks: background writes,
            # embedding and the full collection (bot/collector.py) wait until it is over; outside a reply, a full
            # collection of month 12's heap could run in the middle of a probe while its snippets were read. A
            # reply's recall is over before its reply is sent, and what runs in the gap after it is timed on its own.
            with around(i):
                async with contextlib.AsyncExitStack() as held:
                    for each in memories:
                        await held.enter_async_context(each.recollection.under_way())
                    began = time.perf_counter()
                    await memories[i].recollection.recollect(guild_id, question, channel_id=channel_id)
                    took[i].append(time.perf_counter() - began)
    return took


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@dataclass
class Checkpoint:
    """What one checkpoint measured."""

    month: int
    recall: list[float]
    replies: list[float]
    found: dict[tuple[str, bool], list[bool]]  # (band, patient) -> each question complete
    sizes: dict[str, float] = field(default_factory=dict)
    collections: list[float] = field(default_factory=list)  # seconds each full collection took since the last
    first: list[float] = field(default_factory=list)  # the first checkpoint's database, asked in turn with recall


class Soak:
    """One database living through the guild."""

    def __init__(
        self,
        engine: AsyncEngine,
        conv: Conversation,
        asked: list[Asked],
        embedder: CachedEmbedder,
        seed: int,
        *,
        answering: bool = True,
    ) -> None:
        self.conv, self.asked, self.seed, self.embedder = conv, asked, seed, embedder
        self.answering = answering  # False: the control, a guild whose messages to the bot get no answer
        self.clock = FakeClock(LIVES_FROM - timedelta(days=1))
        self.recorder = RecordingProvider(OfflineProvider())
        self.llm = LLM(None, prompts=load_prompts(), offline=self.recorder)
        url = engine.url.render_as_string(hide_password=False)
        self.settings = Settings(_env_file=None, database_url=url, gemini_api_key=None, discord_token=None)  # type: ignore[call-arg]
        self.memory = MemoryManager(engine, self.settings, llm=self.llm, clock=self.clock, embedder=embedder)
        self.general = conv.channels[0].id
        self.names = {m.id: m.name for m in conv.members}
        self.ids = itertools.count(1)
        self.replies: list[float] = []
        self.answered = 0
        self.checkpoints: list[Checkpoint] = []
        self.collections: list[float] = []
        self._collecting = 0.0
        self.kept: str | None = None  # the first checkpoint's database (a copy's URL)

    def responder(self) -> Responder:
        """The reply as the bot wires it, a question about the past phrased by the model too (as `prompt` shows)."""
        return responder_for(self.memory, self.llm, self.settings, model_answers_recall=True)

    async def live(self, folder: Path) -> list[Checkpoint]:
        async with contextlib.AsyncExitStack() as keeping:
            return await self._live(folder, keeping)

    async def _live(self, folder: Path, keeping: contextlib.AsyncExitStack) -> list[Checkpoint]:
        await self.memory.start(schedule=False)
        # The bot's collection policy (bot/app.py): start-up's objects frozen, full collections between replies.
        # Without it, CPython's own full collections (~110 ms here) fell inside timed recalls: the slowest probes.
        gc.freeze()
        collector = collection.start(self.memory.replies.between)
        gc.callbacks.append(self._timing_collections)
        try:
            for path in write_exports(History.of(self.conv), folder):
                await import_file(self.memory, path, include_bots=False, progress=False)
            await self._settle()
            self.base_rss = rss()
            self.replying = self.responder()
            with self.unhurried():
                self.patient = self.responder()  # memory may take all the time it needs, as `prompt` allows it
            months = iter(CHECKPOINTS)
            month: int | None = next(months)
            day = self.clock.now().date()
            for message, to_bot in lived(self.conv, self.seed):
                while month is not None and message.timestamp >= checkpoint_at(month):
                    self._move_to(checkpoint_at(month))
                    self.checkpoints.append(await self._checkpoint(month))
                    if self.kept is None:  # later checkpoints are timed in turn with this one
                        self.kept = await keeping.enter_async_context(snapshot.kept(self.memory.engine, folder.parent))
                    month = next(months, None)
                self._move_to(message.timestamp)
                if message.timestamp.date() != day:  # a day ended: the scheduler summarises it
                    day = message.timestamp.date()
                    await self._summarise()
                if to_bot and self.answering:
                    self.replies.append((await self._answer(message, self.replying))[0])
                elif to_bot:  # the control: stored as written to the bot, never answered
                    addressed = address(message.text, bot_user_id=BOT_ID, bot_name="Elefant", replied_to_bot=False)
                    await self.memory.intake.message(self._incoming(message, stored_kind(addressed)))
                else:
                    await self.memory.intake.message(self._incoming(message, Kind.SPEECH))
            if month is not None:
                self._move_to(checkpoint_at(month))
                self.checkpoints.append(await self._checkpoint(month))
        finally:
            gc.callbacks.remove(self._timing_collections)
            await collection.stop(collector)
            await self.memory.close()
            gc.unfreeze()
        return self.checkpoints

    @contextlib.contextmanager
    def unhurried(self) -> Iterator[None]:
        """Memory waits for everything it builds meanwhile (MEMORY_WAIT_SECONDS out of the way)."""
        wait, self.settings.memory_wait_seconds = self.settings.memory_wait_seconds, 600
        try:
            yield
        finally:
            self.settings.memory_wait_seconds = wait

    def _timing_collections(self, phase: str, info: dict[str, int]) -> None:
        """Each full collection's pause (between replies, bot/collector.py: no reply waits for it, a message that
        comes in meanwhile does), reported beside recall's times."""
        if info["generation"] == 2:
            if phase == "start":
                self._collecting = time.perf_counter()
            else:
                self.collections.append(time.perf_counter() - self._collecting)

    def _move_to(self, moment: datetime) -> None:
        ahead = (moment - self.clock.now()).total_seconds()
        if ahead > 0:
            self.clock.advance(seconds=ahead)

    async def _settle(self) -> None:
        """What was said so far is stored and embedded (the bot's day has hours for it; the soak stops to wait)."""
        await self.memory.flush()
        if self.memory.embedding is not None:
            await self.memory.embedding.idle()
        await self.memory.flush()

    async def _summarise(self) -> None:
        await self.memory.flush()
        if self.memory.scheduler is not None:
            await self.memory.scheduler.catch_up([self.conv.guild_id], now=self.clock.now())

    def _incoming(self, message: Message, kind: Kind, *, text: str | None = None) -> IncomingMessage:
        return IncomingMessage(
            self.conv.guild_id, message.channel_id, message.message_id, message.author_id,
            self.names.get(message.author_id, "Elefant"), text if text is not None else message.text,
            message.timestamp, reply_to_id=message.reply_to_id, kind=kind,
        )  # fmt: skip

    async def _answer(self, message: Message, responder: Responder) -> tuple[float, str]:
        """Store what was written to the bot, answer it as the listener does, store the answer; seconds taken, and
        the memory part of the prompt the model received."""
        addressed = address(message.text, bot_user_id=BOT_ID, bot_name="Elefant", replied_to_bot=False)
        await self.memory.intake.message(self._incoming(message, stored_kind(addressed)))
        await self._settle()
        request = Request(self.conv.guild_id, message.author_id, addressed or message.text,
                          channel_id=message.channel_id, message_id=message.message_id, bot_user_id=BOT_ID)  # fmt: skip
        self.recorder.calls.clear()
        # Under way as the listener holds it (bot/cogs/listener.py), until the answer is sent and stored: what waits
        # for the gap after a reply (bot/collector.py) runs after it, not at the end of `respond`.
        async with self.memory.recollection.under_way():
            began = time.perf_counter()
            answer = await responder.respond(request)
            took = time.perf_counter() - began
            reply = Message(_as_worker(message.message_id, 4), message.channel_id, BOT_ID, answer.text,
                            message.timestamp + timedelta(milliseconds=1), message.message_id)  # fmt: skip
            await self.memory.intake.reply(
                self._incoming(reply, Kind.BOT), members=answer.members, messages=answer.quoted
            )
        self.answered += 1
        sent = self.recorder.last("chat")
        return took, str(sent.variables.get("memory", "")) if sent is not None else ""

    async def _checkpoint(self, month: int) -> Checkpoint:
        await self._settle()
        said = {m.message_id: m.text for m in self.conv.planted}
        found: dict[tuple[str, bool], list[bool]] = {}
        at = checkpoint_at(month)
        for n, item in enumerate(a for a in self.asked if a.month == month):
            # Each question is asked twice, once per wait; which comes first alternates, so that the second asking
            # (after the bot answered it once) falls on both equally.
            for second, patient in enumerate((False, True) if n % 2 == 0 else (True, False)):
                asked_at = at + timedelta(seconds=2 * n + second)
                text = (
                    item.question.text if "elefant" in item.question.text.lower() else f"Elefant, {item.question.text}"
                )
                message = Message(_snowflake(asked_at), self.general, item.question.asker_id, text, asked_at)
                with self.unhurried() if patient else contextlib.nullcontext():
                    _, memory = await self._answer(message, self.patient if patient else self.replying)
                complete = all(said[e] in memory for e in item.question.evidence_ids)
                found.setdefault((item.band, patient), []).append(complete)
        sizes = await self._sizes()  # before the first checkpoint's database is opened beside this one
        async with self._first() as first:
            recall, again = await self._time_recall(first)
        point = Checkpoint(month, recall, self.replies, found, sizes, self.collections, again)
        self.replies, self.collections = [], []
        return point

    @contextlib.asynccontextmanager
    async def _first(self) -> AsyncIterator[MemoryManager | None]:
        """The first checkpoint's memory, as it was then (None at the first checkpoint itself)."""
        if self.kept is None:
            yield None
            return
        engine = create_engine(self.kept)
        settings = self.settings.model_copy(update={"database_url": self.kept})
        memory = MemoryManager(engine, settings, llm=self.llm, clock=FakeClock(checkpoint_at(CHECKPOINTS[0])),
                               embedder=self.embedder)  # fmt: skip
        try:
            await memory.start(background=False)
            await memory.recollection.vectors_ready(self.conv.guild_id)
            yield memory
        finally:
            await memory.close()
            await engine.dispose()

    async def _time_recall(self, first: MemoryManager | None) -> tuple[list[float], list[float]]:
        """Each probe's seconds here, and (given the first checkpoint's memory) there, asked in turn."""
        memories = [self.memory] + ([first] if first is not None else [])
        took = await ask_in_turn(memories, self.conv.guild_id, self.general, probe_texts())
        return took[0], took[1] if first is not None else []

    async def _sizes(self) -> dict[str, float]:
        counts = await _counts(self.memory.engine)
        member = max(1, counts["speech"])
        days = max(1, (self.clock.now() - LIVES_FROM).days)
        footprint = await _footprint(self.memory.engine)
        return {
            "bytes per member message": footprint["total"] / member,
            "member bytes per member message": footprint["member"] / member,
            "bot bytes per reply": footprint["bot"] / max(1, self.answered),
            "bot rows": counts["conversation"] + counts["sources"],
            "bot text bytes": counts["conversation_bytes"],
            "rows per reply": (counts["conversation"] + counts["sources"]) / max(1, self.answered),
            "sources per reply": counts["sources"] / max(1, self.answered),
            "rows per member message": (counts["speech"] + counts["vectors"]) / member,
            "summary rows per day": counts["summaries"] / days,
            "resident bytes per stored message": (rss() - self.base_rss) / max(1, counts["speech"]),
            "member messages": counts["speech"],
        }


def _snowflake(moment: datetime) -> int:
    return snowflake(moment, worker=3)


def _as_worker(message_id: int, worker: int) -> int:
    """The id of a message written in the same millisecond by another worker (the bot's answer to it)."""
    return (message_id & ~(0x1F << 17)) | (worker << 17)


async def _counts(engine: AsyncEngine) -> dict[str, int]:
    queries = {
        "speech": "SELECT count(*) FROM chat_history WHERE kind = 0",
        "conversation": "SELECT count(*) FROM chat_history WHERE kind <> 0",
        "conversation_bytes": "SELECT coalesce(sum(length(message_text)), 0) FROM chat_history WHERE kind <> 0",
        "sources": "SELECT count(*) FROM reply_sources",
        "vectors": "SELECT count(*) FROM message_vectors",
        "summaries": "SELECT (SELECT count(*) FROM daily_summaries) + (SELECT count(*) FROM historical_summaries) "
        "+ (SELECT count(*) FROM rollups)",
    }
    async with engine.connect() as connection:
        return {name: int(await connection.scalar(text(sql)) or 0) for name, sql in queries.items()}


BOT_TABLES = {"reply_sources", "llm_calls"}  # provenance of the bot's answers, and what its model calls cost
MEMBER_TABLES = {"message_vectors", "daily_summaries", "historical_summaries", "rollups", "member_names"}


async def _footprint(engine: AsyncEngine) -> dict[str, float]:
    """The database's bytes, and those of members' messages and of the bot's own rows: chat_history's table and
    indexes shared by their rows' sizes (the conversation's own index is the bot's), the full-text index, vectors
    and summaries the members', the answers' provenance and model-call rows the bot's; the rest (facts, the change
    log, tombstones) in the total only."""
    async with engine.connect() as connection:
        chat = (await connection.execute(text(_CHAT_SHARES[engine.dialect.name]))).one()
        bot_share = float(chat[1]) / max(1.0, float(chat[0]) + float(chat[1]))
        if engine.dialect.name == "sqlite":
            await connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
            sizes = _sqlite_sizes(str(engine.url.database))
        else:
            rows = await connection.execute(
                text(
                    "SELECT c.relname, c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c "
                    "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
                    "AND n.nspname = current_schema()"
                )
            )
            sizes = [(str(name), str(table), float(size)) for name, table, size in rows]
    total = member = bot = 0.0
    for name, table, size in sizes:
        total += size
        if name == "ix_chat_history_conversation" or table in BOT_TABLES:
            bot += size
        elif table == "chat_history":
            member, bot = member + size * (1 - bot_share), bot + size * bot_share
        elif table in MEMBER_TABLES or table.startswith("chat_fts"):
            member += size
    return {"total": total, "member": member, "bot": bot}


def _sqlite_sizes(path: str) -> list[tuple[str, str, float]]:
    """Each table's and index's bytes in a SQLite file, from its `dbstat` table: read by the standard library's
    SQLite in a process of its own (the bundled one the bot uses, pysqlite3, is built without `dbstat`)."""
    script = (
        "import json, sqlite3, sys; c = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); print(json.dumps("
        "c.execute('SELECT d.name, coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat AS d LEFT JOIN "
        "sqlite_master AS m ON m.name = d.name GROUP BY d.name').fetchall()))"
    )
    out = subprocess.run([sys.executable, "-c", script, path], check=True, capture_output=True, text=True).stdout
    return [(str(n), str(t), float(b)) for n, t, b in json.loads(out)]


_CHAT_SHARES = {
    "sqlite": "SELECT coalesce(sum(CASE WHEN kind = 0 THEN length(message_text) + 40 END), 0), "
    "coalesce(sum(CASE WHEN kind <> 0 THEN length(message_text) + 40 END), 0) FROM chat_history",
    "postgresql": "SELECT coalesce(sum(pg_column_size(c.*)) FILTER (WHERE kind = 0), 0), "
    "coalesce(sum(pg_column_size(c.*)) FILTER (WHERE kind <> 0), 0) FROM chat_history AS c",
}


def report(name: str, points: list[Checkpoint]) -> None:
    """The checkpoints of one database as a table, and month 12 against month 1."""
    ms = 1000

    def share(point: Checkpoint, band: str, patient: bool) -> str:
        values = point.found.get((band, patient), [])
        return f"{sum(values) / len(values):.2f} ({len(values)})" if values else "–"

    rows = [
        [
            str(p.month),
            f"{pct(p.recall, 0.5) * ms:.0f} / {pct(p.recall, 0.99) * ms:.0f}",
            f"{pct(p.first, 0.5) * ms:.0f} / {pct(p.first, 0.99) * ms:.0f}" if p.first else "–",
            f"{pct(p.replies, 0.5) * ms:.0f} / {pct(p.replies, 0.99) * ms:.0f}",
            share(p, "weeks", False),
            share(p, "weeks", True),
            share(p, "months", False),
            share(p, "months", True),
            f"{p.sizes['bytes per member message']:,.0f}",
            f"{p.sizes['member bytes per member message']:,.0f}",
            f"{p.sizes['bot bytes per reply']:,.0f}",
            f"{p.sizes['resident bytes per stored message']:,.0f}",
            f"{p.sizes['rows per reply']:.1f} ({p.sizes['sources per reply']:.1f} sources)",
            f"{p.sizes['rows per member message']:.2f}",
            f"{p.sizes['summary rows per day']:.1f}",
            f"{p.sizes['member messages']:,.0f} / {p.sizes['bot rows']:,.0f}",
            f"{p.sizes['bot text bytes'] / 1e6:.1f}",
            f"{len(p.collections)} / {max(p.collections, default=0.0) * ms:.0f}",
        ]
        for p in points
    ]
    headers = ["month", "recall p50/p99 ms", "month 1 in turn p50/p99 ms", "reply p50/p99 ms", "found weeks (wait)",
               "found weeks (no wait)", "found months (wait)", "found months (no wait)", "DB bytes / member msg",
               "members' bytes / member msg", "bot's bytes / reply", "RSS bytes / msg",
               "rows / reply", "rows / member msg", "summary rows / day", "member msgs / bot rows",
               "bot text MB", "full collections / longest ms"]  # fmt: skip
    print_table(f"bench.soak — {name}", headers, rows)
    first, last = points[0], points[-1]
    in_turn = ""
    if last.first:
        p50, p99 = (pct(last.recall, q) / pct(last.first, q) for q in (0.5, 0.99))
        in_turn = f" (asked in turn with month {first.month}'s database: p50 {p50:.2f}x, p99 {p99:.2f}x)"
    print(
        f"\nmonth {last.month} against month {first.month}: recall p99 "
        f"{pct(last.recall, 0.99) / pct(first.recall, 0.99):.2f}x{in_turn}, members' bytes per member message "
        f"{last.sizes['member bytes per member message'] / first.sizes['member bytes per member message']:.2f}x, "
        f"the bot's bytes per reply {last.sizes['bot bytes per reply'] / first.sizes['bot bytes per reply']:.2f}x"
    )


async def embedder_for(conv: Conversation, messages: int, seed: int) -> CachedEmbedder:
    """The cached vectors of everything the guild's members say, history and lived year (not what they write to
    the bot: that is embedded, if ever, as it comes)."""
    history = ((m, False) for m in History.of(conv).iter_messages())
    speech = (m.text for m, to_bot in itertools.chain(history, lived(conv, seed)) if not to_bot)
    return await CachedEmbedder.for_texts(speech, name=f"soak-{messages}-{seed}")


async def run(
    messages: int,
    *,
    postgres: str | None,
    seed: int,
    answering: bool = True,
    per_band: int | None = None,
    sqlite: bool = True,
    tellings: int = TELLINGS,
) -> dict[str, list[Checkpoint]]:
    """Live the guild on SQLite (and PostgreSQL), report each; `per_band`: at most so many planted questions of
    each band at each checkpoint (a quick check); `tellings`: each story kind told so many times per checkpoint and
    band (a small guild holds fewer stories)."""
    conv, asked = soak_guild(messages, seed, tellings)
    if per_band is not None:
        taken: Counter[tuple[int, str]] = Counter()
        for item in list(asked):
            taken[(item.month, item.band)] += 1
            if taken[(item.month, item.band)] > per_band:
                asked.remove(item)
    embedder = await embedder_for(conv, messages, seed)
    results: dict[str, list[Checkpoint]] = {}
    backends: list[tuple[str, Callable[[Path], object]]] = [("SQLite", sqlite_engine)] if sqlite else []
    if postgres:
        backends.append(("PostgreSQL", lambda d: postgres_engine(postgres)))
    try:
        for name, opening in backends:
            with tempfile.TemporaryDirectory() as folder:
                began = time.perf_counter()
                async with opening(Path(folder)) as engine:  # type: ignore[attr-defined]
                    soak = Soak(engine, conv, asked, embedder, seed, answering=answering)
                    results[name] = await soak.live(Path(folder) / "export")
                print(f"{name}: lived {messages:,} messages in {time.perf_counter() - began:.0f} s")
                report(name, results[name])
    finally:
        embedder.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=180_000, help="messages over the guild's 15 months")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="a PostgreSQL URL to create a database in")
    only = parser.add_mutually_exclusive_group()  # both would measure nothing
    only.add_argument("--sqlite-only", action="store_true")
    only.add_argument("--postgres-only", action="store_true")
    parser.add_argument("--questions", type=int, help="at most this many planted questions per band and checkpoint")
    parser.add_argument(
        "--no-answers", action="store_true", help="the control: what members write to the bot is stored, not answered"
    )
    args = parser.parse_args()
    postgres = None if args.sqlite_only else args.postgres
    asyncio.run(
        run(
            args.messages,
            postgres=postgres,
            seed=args.seed,
            answering=not args.no_answers,
            per_band=args.questions,
            sqlite=not args.postgres_only,
        )
    )


if __name__ == "__main__":
    main()
