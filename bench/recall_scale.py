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
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

from bench.common import print_table, sqlite_engine
from bench.recall import CHANNELS, GUILD, NAMES, NOW, build, pct, vocabulary
from bot.conversation import Request
from bot.llm.client import LLM
from bot.llm.local_embedder import DIMENSIONS, MODEL, LocalEmbedder
from bot.llm.prompts import load_prompts
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.vector_index import quantize
from bot.responder import Responder
from bot.settings import Settings
from db import maintenance

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


async def measure(messages: int, seed: int, directory: Path) -> list[list[str]]:
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
        settings = Settings(
            _env_file=None, database_url=str(engine.url), gemini_api_key=None, discord_token=None
        )  # type: ignore[call-arg]
        memory = MemoryManager(
            engine, settings, llm=LLM(None, prompts=load_prompts()), clock=FakeClock(NOW), embedder=LocalEmbedder()
        )
        await memory.start(background=False)
        for i, name in enumerate(NAMES):
            await memory.note_member(GUILD, 2**60 + 5000 + i, name, name.lower())
        assert memory.vectors is not None
        began = time.perf_counter()
        assert await memory.vectors_ready(GUILD)
        index_seconds = time.perf_counter() - began
        index = memory.vectors._guilds[GUILD].index  # noqa: SLF001 - measuring its size
        per_vector_index = len(faiss.serialize_index(index)) / messages
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
    return [
        ["messages (each with a vector)", f"{messages:,}"],
        ["vector index build (background, first question after a start)", f"{index_seconds:.1f} s"],
        [f"recall p50 / p99 ({len(questions)} questions, question embedded)", f"{pct(timings, 50):.1f} / {pct(timings, 99):.1f} ms"],
        ["bytes per vector in SQL (int8 × scale, with row and index)", f"{per_vector_sql:,.0f}"],
        ["bytes per vector in the index (serialised)", f"{per_vector_index:,.0f}"],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="elefant-scale-") as tmp:
        rows = asyncio.run(measure(args.messages, args.seed, Path(tmp)))
    print_table("Recall at scale (SQLite, offline model for the question)", ["measure", "value"], rows)


if __name__ == "__main__":
    main()
