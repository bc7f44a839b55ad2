"""How recall's latency and footprint grow with the guild: 1,000,000 messages by default.

The guild is bench.recall's generator (40 members, a year, planted facts), indexed for words by the real
triggers. Every message also gets a vector — random unit vectors, quantised and stored as the bot stores them
(embedding a million messages with the offline model takes hours on this machine; the cost of searching an
index does not depend on what the vectors mean, so quality is measured apart, by `--conversations`). Each
question then goes through `Responder.recall_memory` — the exact text the model would receive — with the
question embedded by the offline model, as a reply would. Reported: the time to build the guild's vector index
(what the first question after a start triggers in the background), recall p50/p99, and bytes per vector.

    python -m bench.recall_scale --messages 1000000
    python -m bench.recall_scale --messages 1000000 --postgres postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sqlite3
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import faiss
import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common import postgres_engine, print_table, sqlite_engine
from bench.recall import CHANNELS, GUILD, MEMBERS, NAMES, NOW, Plant, build, pct, vocabulary
from bot.conversation import Request
from bot.llm.local_embedder import DIMENSIONS, MODEL, LocalEmbedder
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.recall.vectors import quantize
from bot.responder import Responder
from bot.settings import Settings
from db import maintenance
from fakes.models import model_stack

CHUNK = 50_000


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
        await target.execute("ANALYZE")
    finally:
        source.close()
        await target.close()
    return time.perf_counter() - began


async def measure(messages: int, seed: int, directory: Path, postgres: str | None = None) -> list[list[str]]:
    async with sqlite_engine(directory) as engine:
        path = Path(str(engine.url.database))
        began = time.perf_counter()
        plants = await asyncio.to_thread(build, path, messages, 365, seed)
        built = time.perf_counter() - began
        before = path.stat().st_size  # noqa: ASYNC240 - between phases, nothing else runs
        vector_seconds = await asyncio.to_thread(add_vectors, path, seed)
        per_vector_sql = (path.stat().st_size - before) / messages  # noqa: ASYNC240
        await maintenance.optimize(engine)
        print(f"{messages:,} messages built in {built:.0f} s, vectors stored in {vector_seconds:.0f} s")
        rows = await _questions(
            engine, plants, messages=messages, seed=seed, per_vector_sql=per_vector_sql, name="SQLite"
        )
    if postgres:
        async with postgres_engine(postgres) as pg:
            print(f"copied to PostgreSQL in {await copy_to_postgres(path, pg):.0f} s")
            rows += await _questions(pg, plants, messages=messages, seed=seed, per_vector_sql=None, name="PostgreSQL")
    return rows


async def _questions(
    engine: AsyncEngine, plants: list[Plant], *, messages: int, seed: int, per_vector_sql: float | None, name: str
) -> list[list[str]]:
    settings = Settings(_env_file=None, database_url=str(engine.url), gemini_api_key=None, discord_token=None)  # type: ignore[call-arg]
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW), embedder=LocalEmbedder())
    await memory.start(background=False)
    for i, member in enumerate(NAMES):
        await memory.intake.member(GUILD, MEMBERS[i], member, member.lower())
    assert memory.vectors is not None
    began = time.perf_counter()
    assert await memory.recollection.vectors_ready(GUILD)
    index_seconds = time.perf_counter() - began
    index = memory.vectors._guilds[GUILD].index  # measuring its size
    per_vector_index = len(faiss.serialize_index(index)) / messages
    gc.freeze()  # as the bot does once started (bot/app.py): full collections would walk start-up's objects
    responder = Responder(memory, router=None, chatter=_unused, policy="anyone")
    rng = random.Random(seed + 1)
    vocab, _ = vocabulary(random.Random(seed))
    questions = [p.question for p in plants] + [
        f"what did people say about {' '.join(rng.sample(vocab[15:800], 2))}?" for _ in range(300)
    ]
    await responder.recall_memory(Request(GUILD, 2**60 + 4999, questions[0], channel_id=CHANNELS[0]))
    timings = []
    for question in questions:
        request = Request(GUILD, 2**60 + 4999, question, channel_id=CHANNELS[0])
        began = time.perf_counter()
        await responder.recall_memory(request)
        timings.append((time.perf_counter() - began) * 1000)
    await memory.close()
    rows = [
        [f"{name}: messages (each with a vector)", f"{messages:,}"],
        [f"{name}: vector index build (background, first question after a start)", f"{index_seconds:.1f} s"],
        [
            f"{name}: recall p50 / p99 ({len(questions)} questions, question embedded)",
            f"{pct(timings, 50):.1f} / {pct(timings, 99):.1f} ms",
        ],
        [f"{name}: bytes per vector in the index (serialised)", f"{per_vector_index:,.0f}"],
    ]
    if per_vector_sql is not None:
        rows.append([f"{name}: bytes per vector in SQL (int8 × scale, row and index)", f"{per_vector_sql:,.0f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", help="also measure on PostgreSQL (a server URL; a database is made and dropped)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="elefant-scale-") as tmp:
        rows = asyncio.run(measure(args.messages, args.seed, Path(tmp), args.postgres))
    print_table("Recall at scale (offline model for the question)", ["measure", "value"], rows)


if __name__ == "__main__":
    main()
