"""Ingest benchmark: naive per-message commits vs the write-behind path vs raw sqlite3 executemany.

Run: python -m bench.ingest [--messages 50000] [--repeat 3] [--pg postgresql+asyncpg://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median

from sqlalchemy import insert
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite

from bench.common import StallMeter, postgres_engine, print_table, sqlite_engine
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage
from bot.settings import Settings
from db.engine import tune_sqlite
from db.messages import BatchWriter
from db.models import ChatMessage

_INSERT = (
    "INSERT INTO chat_history (message_id, guild_id, channel_id, user_id, message_text, timestamp, "
    "edited_at, reply_to_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
GUILD = 2**60


def make_messages(n: int) -> list[IncomingMessage]:
    """n realistic messages: 200 authors, 5 channels, one second apart."""
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    return [
        IncomingMessage(
            guild_id=GUILD,
            channel_id=GUILD + 1 + i % 5,
            message_id=GUILD + 10_000 + i,
            author_id=GUILD + 100 + i % 200,
            author_name=f"user{i % 200}",
            content=f"message number {i} about something people talk about in a guild",
            created_at=t0 + timedelta(seconds=i),
        )
        for i in range(n)
    ]


async def naive(engine, messages: list[IncomingMessage]) -> float:
    """(a) one INSERT + COMMIT per message through SQLAlchemy."""
    started = time.perf_counter()
    for m in messages:
        async with engine.begin() as conn:
            await conn.execute(
                insert(ChatMessage).values(
                    message_id=m.message_id,
                    guild_id=m.guild_id,
                    channel_id=m.channel_id,
                    user_id=m.author_id,
                    message_text=m.content,
                    timestamp=m.created_at,
                    reply_to_id=m.reply_to_id,
                )
            )
    return len(messages) / (time.perf_counter() - started)


async def write_behind(engine, messages: list[IncomingMessage]) -> tuple[float, float]:
    """(b) the project's path: MemoryManager.ingest_message + flush; also the worst loop stall."""
    manager = MemoryManager(engine, Settings(_env_file=None))  # type: ignore[call-arg]
    await manager.start()
    with StallMeter() as meter:
        started = time.perf_counter()
        for m in messages:
            await manager.ingest_message(m, wait=True)  # back-pressure: measure storage, not the disk
        await manager.flush()
        rate = len(messages) / (time.perf_counter() - started)
    await manager.close()
    return rate, meter.worst


def raw_sqlite(path: Path, messages: list[IncomingMessage], *, rows_in_clock: bool) -> float:
    """(c) the ceiling: sqlite3.executemany in one transaction, no framework, no queue, no batching.

    With `rows_in_clock` it stores the *messages*: the same SQL as (b), rows built from the messages inside
    the measurement, as any real path must. Without, a plain INSERT of tuples built before the clock
    starts: the bare driver figure, for reference.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    tune_sqlite(conn, None)
    writer = BatchWriter(SQLiteDialect_aiosqlite())
    if not rows_in_clock:
        rows = [
            (
                m.message_id,
                m.guild_id,
                m.channel_id,
                m.author_id,
                m.content,
                m.created_at.strftime("%Y-%m-%d %H:%M:%S.%f"),
                None,
                m.reply_to_id,
            )
            for m in messages
        ]
    started = time.perf_counter()
    statements = writer.prepare(messages) if rows_in_clock else [(_INSERT, rows)]
    conn.execute("BEGIN IMMEDIATE")
    for sql, batch in statements:
        conn.executemany(sql, batch)
    conn.execute("COMMIT")
    rate = len(messages) / (time.perf_counter() - started)
    conn.close()
    return rate


async def measure_sqlite(messages: list[IncomingMessage], repeat: int) -> dict[str, float]:
    """All SQLite figures; (b) and (c) as medians of `repeat` alternating runs."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        async with sqlite_engine(directory) as engine:
            rate_a = await naive(engine, messages)
        # Alternating runs so that a noisy neighbour on this 2-core machine hits both sides alike.
        runs_b, stalls, runs_c, runs_c0 = [], [], [], []
        for _ in range(repeat):
            async with sqlite_engine(directory) as engine:
                rate, stall = await write_behind(engine, messages)
                runs_b.append(rate)
                stalls.append(stall)
            async with sqlite_engine(directory) as engine:
                runs_c.append(raw_sqlite(Path(engine.url.database or ""), messages, rows_in_clock=True))
            async with sqlite_engine(directory) as engine:
                runs_c0.append(raw_sqlite(Path(engine.url.database or ""), messages, rows_in_clock=False))
    return {
        "a": rate_a,
        "b": median(runs_b),
        "stall": max(stalls),
        "c": median(runs_c),
        "c0": median(runs_c0),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of (b) and (c); medians are printed")
    parser.add_argument("--pg", default="postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    messages = make_messages(args.messages)
    r = await measure_sqlite(messages, args.repeat)
    rows = [
        ["(a) naive INSERT+COMMIT per message, SQLite", f"{r['a']:,.0f}", "one run"],
        [
            "(b) write-behind batches, SQLite",
            f"{r['b']:,.0f}",
            f"median of {args.repeat}; longest loop stall {r['stall'] * 1000:.1f} ms",
        ],
        [
            "(c) raw sqlite3.executemany, one transaction",
            f"{r['c']:,.0f}",
            f"median of {args.repeat}; same SQL as (b), rows built from the messages in the clock",
        ],
        [
            "(c0) raw sqlite3.executemany, plain INSERT",
            f"{r['c0']:,.0f}",
            f"median of {args.repeat}; tuples pre-built, no upsert, no names (bare driver, reference)",
        ],
    ]
    try:
        async with postgres_engine(args.pg) as engine:
            rate_pg, stall_pg = await write_behind(engine, messages)
        rows.append(
            [
                "(b) write-behind batches, PostgreSQL",
                f"{rate_pg:,.0f}",
                f"one run; longest loop stall {stall_pg * 1000:.1f} ms",
            ]
        )
    except OSError as exc:
        rows.append(["(b) PostgreSQL", "skipped", f"unreachable: {exc}"])
    print_table(f"Ingest, {args.messages:,} messages (messages/s)", ["path", "msg/s", "note"], rows)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print_table(
        "Targets",
        ["ratio", "measured", "target", ""],
        [
            ["b/a", f"{r['b'] / r['a']:.1f}", "≥ 20", verdict(r["b"] / r["a"] >= 20)],
            ["c/b", f"{r['c'] / r['b']:.2f}", "≤ 2", verdict(r["c"] / r["b"] <= 2)],
            ["c0/b", f"{r['c0'] / r['b']:.2f}", "(reference)", ""],
            ["stall (b, SQLite)", f"{r['stall'] * 1000:.1f} ms", "< 50 ms", verdict(r["stall"] < 0.05)],
        ],
    )


if __name__ == "__main__":
    asyncio.run(main())
