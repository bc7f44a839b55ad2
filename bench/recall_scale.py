"""How recall's latency and footprint grow with the guild: 1,000,000 messages by default.

The guild is bench.recall's generator (40 members, a year, planted facts), indexed for words by the real
triggers. Every message also gets a vector — random unit vectors, quantised and stored as the bot stores them
(embedding a million messages with the offline model takes hours on this machine; the cost of searching an
index does not depend on what the vectors mean, so quality is measured apart, by `--conversations`). Each
question then goes through `Recollection.for_reply` — the exact text the model would receive — with the
question embedded by the offline model, as a reply would. Reported: the time to build the guild's vector index
(what the first question after a start triggers in the background), recall p50/p99, and bytes per vector.

    python -m bench.recall_scale --messages 1000000
    python -m bench.recall_scale --messages 200000 --postgres   # the same questions on both, with their ratio
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import faiss
import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common import postgres_engine, print_table, sqlite_engine
from bench.recall import CHANNELS, GUILD, MEMBERS, NAMES, NOW, Plant, build, pct, vocabulary
from bot.llm.local_embedder import DIMENSIONS, MODEL, LocalEmbedder
from bot.memory.assembly import Asked
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.recall.vectors import quantize
from bot.reply.routing import Request
from bot.settings import Settings
from db import statistics
from fakes.models import model_stack

CHUNK = 50_000
DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
PAGE = os.sysconf("SC_PAGE_SIZE")


def _vectors(count: int, rng: np.random.Generator) -> list[tuple[bytes, float]]:
    raw = rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
    return quantize(raw / np.linalg.norm(raw, axis=1, keepdims=True))


def add_vectors(path: Path, seed: int) -> float:
    """Give every message a vector, as the embedding worker stores it; seconds taken."""
    began = time.perf_counter()
    rng = np.random.default_rng(seed)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA synchronous=OFF")
    ids = [row[0] for row in connection.execute("SELECT message_id FROM chat_history ORDER BY message_id")]
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        rows = [
            (m, GUILD, MODEL, blob, scale) for m, (blob, scale) in zip(chunk, _vectors(len(chunk), rng), strict=True)
        ]
        connection.executemany(
            "INSERT INTO message_vectors (message_id, guild_id, model, vector, scale) VALUES (?, ?, ?, ?, ?)", rows
        )
        connection.commit()
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return time.perf_counter() - began


async def _unused(request: Request, memory: str | None) -> str:
    raise AssertionError("the benchmark never asks the model")


async def copy_to_postgres(path: Path, engine: AsyncEngine) -> float:
    """The same guild, messages and vectors, copied into a migrated PostgreSQL database; seconds taken."""
    began = time.perf_counter()
    url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    target = await asyncpg.connect(url)
    source = sqlite3.connect(path)
    try:
        for table, columns in (
            ("chat_history", "message_id, guild_id, channel_id, user_id, message_text, timestamp"),
            ("message_vectors", "message_id, guild_id, model, vector, scale"),
        ):
            names = [c.strip() for c in columns.split(",")]
            cursor = source.execute(f"SELECT {columns} FROM {table}")
            while rows := cursor.fetchmany(CHUNK):
                if table == "chat_history":
                    rows = [(*r[:5], datetime.fromisoformat(r[5]).replace(tzinfo=UTC)) for r in rows]
                await target.copy_records_to_table(table, records=rows, columns=names)
        # As autovacuum leaves it: without, the GIN index keeps the copy in its pending list (4 MB, scanned by
        # every search: +5 ms a question at 200,000 messages).
        await target.execute("VACUUM ANALYZE")
    finally:
        source.close()
        await target.close()
    return time.perf_counter() - began


@dataclass
class Measured:
    """One database's figures over the same questions."""

    index_seconds: float
    index_peak: int  # resident bytes at most while the index was built, above what was resident before
    resident: int  # resident bytes after the questions, above what was resident before the recall started
    per_vector_index: float
    timings: list[float]


async def measure(
    messages: int, seed: int, directory: Path, postgres: str | None = None
) -> tuple[float | None, Measured, Measured | None]:
    """The guild built once, its questions asked on SQLite and (with `postgres`) on a copy in PostgreSQL."""
    async with sqlite_engine(directory) as engine:
        path = Path(str(engine.url.database))
        began = time.perf_counter()
        plants = await asyncio.to_thread(build, path, messages, 365, seed)
        built = time.perf_counter() - began
        before = path.stat().st_size  # noqa: ASYNC240 - between phases, nothing else runs
        vector_seconds = await asyncio.to_thread(add_vectors, path, seed)
        per_vector_sql = (path.stat().st_size - before) / messages  # noqa: ASYNC240
        await statistics.refresh(engine)
        print(f"{messages:,} messages built in {built:.0f} s, vectors stored in {vector_seconds:.0f} s")
        questions = _question_texts(plants, seed)
        sqlite = await _questions(engine, questions, messages)
    pg = None
    if postgres:
        async with postgres_engine(postgres) as pg_engine:
            print(f"copied to PostgreSQL in {await copy_to_postgres(path, pg_engine):.0f} s")
            pg = await _questions(pg_engine, questions, messages)
    return per_vector_sql, sqlite, pg


def _question_texts(plants: list[Plant], seed: int) -> list[str]:
    """The planted facts' questions and 300 random two-word ones: the same on every database."""
    rng = random.Random(seed + 1)
    vocab, _ = vocabulary(random.Random(seed))
    return [p.question for p in plants] + [
        f"what did people say about {' '.join(rng.sample(vocab[15:800], 2))}?" for _ in range(300)
    ]


def _resident() -> int:
    """This process's resident bytes now."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE


class _Peak:
    """The most resident bytes seen while a block runs (sampled every 20 ms on a thread of its own)."""

    def __enter__(self) -> _Peak:
        self.peak = _resident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _resident())

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _resident())


async def _questions(engine: AsyncEngine, questions: list[str], messages: int) -> Measured:
    gc.collect()
    resident = _resident()
    settings = Settings(_env_file=None, database_url=str(engine.url), gemini_api_key=None, discord_token=None)  # type: ignore[call-arg]
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW), embedder=LocalEmbedder())
    await memory.start(background=False)
    for i, member in enumerate(NAMES):
        await memory.intake.member(GUILD, MEMBERS[i], member, member.lower())
    assert memory.vectors is not None
    began = time.perf_counter()
    with _Peak() as peak:
        assert await memory.recollection.vectors_ready(GUILD)
    index_seconds = time.perf_counter() - began
    index = memory.vectors._guilds[GUILD].index  # measuring its size
    per_vector_index = len(faiss.serialize_index(index)) / messages
    gc.freeze()  # as the bot does once started (bot/app.py): full collections would walk start-up's objects
    await memory.recollection.for_reply(Asked(GUILD, 2**60 + 4999, questions[0], channel_id=CHANNELS[0]))
    timings = []
    for question in questions:
        asked = Asked(GUILD, 2**60 + 4999, question, channel_id=CHANNELS[0])
        began = time.perf_counter()
        await memory.recollection.for_reply(asked)
        timings.append((time.perf_counter() - began) * 1000)
    used = _resident() - resident
    await memory.close()
    gc.unfreeze()
    return Measured(index_seconds, peak.peak - resident, used, per_vector_index, timings)


def table(messages: int, per_vector_sql: float | None, sqlite: Measured, pg: Measured | None) -> list[list[str]]:
    """Rows of measure, SQLite, PostgreSQL and their ratio (PostgreSQL / SQLite)."""
    ran = [sqlite, *([pg] if pg else [])]

    def row(name: str, value: Callable[[Measured], float], shown: Callable[[float], str]) -> list[str]:
        values = [value(m) for m in ran]
        ratio = [f"{values[1] / values[0]:.2f}×" if values[0] else "—"] if pg else []
        return [name, *(shown(v) for v in values), *ratio]

    questions = len(sqlite.timings)
    memory = "SQLite's run"
    blank = ["—", "—"] if pg else []
    return [
        [f"messages (each with a vector); {questions} questions, embedded", *[f"{messages:,}"] * len(ran)]
        + (["—"] if pg else []),
        row("recall p50 (ms)", lambda m: pct(m.timings, 50), lambda v: f"{v:.1f}"),
        row("recall p99 (ms)", lambda m: pct(m.timings, 99), lambda v: f"{v:.1f}"),
        row(
            "vector index build (s; background, first question after a start)",
            lambda m: m.index_seconds,
            lambda v: f"{v:.1f}",
        ),
        # Memory of SQLite's run only: PostgreSQL's runs after it in the same process, which reuses what it freed.
        [f"index build peak (MB resident above the start; {memory})", f"{sqlite.index_peak / 1e6:,.0f}", *blank],
        [f"resident after the questions (bytes per message; {memory})", f"{sqlite.resident / messages:,.0f}", *blank],
        row("bytes per vector in the index (serialised)", lambda m: m.per_vector_index, lambda v: f"{v:,.0f}"),
        [
            "bytes per vector in SQLite (int8 × scale, row and index)",
            f"{per_vector_sql:,.0f}" if per_vector_sql else "—",
            *(["—", "—"] if pg else []),
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--postgres",
        nargs="?",
        const=os.environ.get("TEST_DATABASE_URL", DEFAULT_POSTGRES),
        help="also on PostgreSQL, the same questions in the same run (a server URL, default TEST_DATABASE_URL or "
        f"{DEFAULT_POSTGRES}; a database of its own is made there and dropped)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="elefant-scale-") as tmp:
        per_vector_sql, sqlite, pg = asyncio.run(measure(args.messages, args.seed, Path(tmp), args.postgres))
    headers = ["measure", "SQLite", *(["PostgreSQL", "PostgreSQL / SQLite"] if pg else [])]
    print_table(
        "Recall at scale (offline model for the question)", headers, table(args.messages, per_vector_sql, sqlite, pg)
    )


if __name__ == "__main__":
    main()
