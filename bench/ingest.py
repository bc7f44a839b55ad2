"""Ingest benchmark: naive per-message commits vs the write-behind path vs raw sqlite3 executemany.

Run: python -m bench.ingest [--messages 50000] [--pg postgresql+asyncpg://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from bench.common import StallMeter, postgres_engine, print_table, sqlite_engine
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage
from bot.settings import Settings
from db.models import ChatMessage

GUILD = 2**60


def make_messages(n: int) -> list[IncomingMessage]:
    """n realistic messages: 200 authors, 5 channels, one second apart."""
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    return [
        IncomingMessage(
            guild_id=GUILD, channel_id=GUILD + 1 + i % 5, message_id=GUILD + 10_000 + i,
            author_id=GUILD + 100 + i % 200, author_name=f"user{i % 200}",
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
            await conn.execute(insert(ChatMessage).values(
                message_id=m.message_id, guild_id=m.guild_id, channel_id=m.channel_id, user_id=m.author_id,
                message_text=m.content, timestamp=m.created_at, reply_to_id=m.reply_to_id,
            ))
    return len(messages) / (time.perf_counter() - started)


async def write_behind(engine, messages: list[IncomingMessage]) -> tuple[float, float]:
    """(b) the project's path: MemoryManager.ingest_message + flush; also the worst loop stall."""
    manager = MemoryManager(engine, Settings(_env_file=None))  # type: ignore[call-arg]
    await manager.start()
    with StallMeter() as meter:
        started = time.perf_counter()
        for m in messages:
            await manager.ingest_message(m)
        await manager.flush()
        rate = len(messages) / (time.perf_counter() - started)
    await manager.close()
    return rate, meter.worst


def raw_sqlite(path: Path, messages: list[IncomingMessage]) -> float:
    """(c) the ceiling: sqlite3.executemany of pre-built tuples in one transaction."""
    rows = [(m.message_id, m.guild_id, m.channel_id, m.author_id, m.content,
             m.created_at.strftime("%Y-%m-%d %H:%M:%S.%f"), None, m.reply_to_id) for m in messages]
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    started = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO chat_history VALUES (?,?,?,?,?,?,?,?)", rows)
    rate = len(messages) / (time.perf_counter() - started)
    conn.close()
    return rate


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--pg", default="postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    messages = make_messages(args.messages)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        async with sqlite_engine(directory) as engine:
            rate_a = await naive(engine, messages)
        async with sqlite_engine(directory) as engine:
            rate_b, stall = await write_behind(engine, messages)
        async with sqlite_engine(directory) as engine:
            path = Path(engine.url.database or "")
            rate_c = raw_sqlite(path, messages)
    rows = [
        ["(a) naive INSERT+COMMIT per message, SQLite", f"{rate_a:,.0f}", ""],
        ["(b) write-behind batches, SQLite", f"{rate_b:,.0f}", f"longest loop stall {stall * 1000:.1f} ms"],
        ["(c) raw sqlite3.executemany, one transaction", f"{rate_c:,.0f}", ""],
    ]
    try:
        async with postgres_engine(args.pg) as engine:
            rate_pg, stall_pg = await write_behind(engine, messages)
        rows.append(["(b) write-behind batches, PostgreSQL", f"{rate_pg:,.0f}",
                     f"longest loop stall {stall_pg * 1000:.1f} ms"])
    except OSError as exc:
        rows.append(["(b) PostgreSQL", "skipped", f"unreachable: {exc}"])
    print_table(f"Ingest, {args.messages:,} messages (messages/s)", ["path", "msg/s", "note"], rows)
    verdict = lambda ok: "ok" if ok else "MISSED"  # noqa: E731
    print_table("Targets", ["ratio", "measured", "target", ""], [
        ["b/a", f"{rate_b / rate_a:.1f}", "≥ 20", verdict(rate_b / rate_a >= 20)],
        ["c/b", f"{rate_c / rate_b:.2f}", "≤ 2", verdict(rate_c / rate_b <= 2)],
        ["stall (b, SQLite)", f"{stall * 1000:.1f} ms", "< 50 ms", verdict(stall < 0.05)],
    ])


if __name__ == "__main__":
    asyncio.run(main())
