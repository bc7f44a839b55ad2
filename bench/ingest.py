"""Ingest benchmark: the write-behind path against the bare driver, with and without the full-text index.

Rows, SQLite unless said (50,000 messages each, medians of --repeat runs, alternated so that a noisy
neighbour on a shared machine hits every row alike):
  (a)  naive: one INSERT + COMMIT per message through SQLAlchemy (one run: it is slow)
  (b)  the project's path: MemoryManager.ingest_message → write-behind queue → 1,000-row transactions, the
       full-text index fed in one statement per batch (db/messages.py, migration 0010)
  (bt) the same, the index fed by the per-row trigger (how it was before 0010)
  (b0) the same, no full-text index at all (what indexing costs)
  (c)  one transaction of the same SQL as (b), rows built from the messages inside the clock, no queue
  (d)  the bare driver: plain INSERT of pre-built tuples into a plain table (no keys, no indexes), one
       transaction; every ratio is against this row
and on PostgreSQL (b) and (b0) (no tsvector column and GIN index).

Run: python -m bench.ingest [--messages 50000] [--repeat 5] [--pg postgresql+asyncpg://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common import StallMeter, postgres_engine, print_table, sqlite_engine
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage
from bot.settings import Settings
from db.engine import tune_sqlite
from db.messages import SqliteBatch, SqliteBatchWriter
from db.models import ChatMessage

GUILD = 2**60
_PLAIN = (
    "CREATE TABLE plain (message_id INTEGER, guild_id INTEGER, channel_id INTEGER, user_id INTEGER, "
    "message_text TEXT, timestamp TEXT, edited_at TEXT, reply_to_id INTEGER, kind INTEGER)"
)
_PLAIN_INSERT = "INSERT INTO plain VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


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


class TriggerWriter(SqliteBatchWriter):
    """Every new row indexed by the per-row insert trigger, as before migration 0010."""

    def _upsert_messages(self, connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> int:
        return self._upsert_by_triggers(connection, rows)


class _NoIndex(SqliteBatch):
    """No full-text index (on a database whose insert trigger is dropped): what the rest costs."""

    def _upsert_messages(self, connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> int:
        connection.executemany(self._insert_new, rows)
        return len(rows)


class UnindexedWriter(_NoIndex, SqliteBatchWriter):
    """The write-behind queue's writer without the full-text index."""


async def naive(engine: AsyncEngine, messages: list[IncomingMessage]) -> float:
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


async def write_behind(
    engine: AsyncEngine, messages: list[IncomingMessage], writer: Callable[[AsyncEngine], Any] | None = None
) -> tuple[float, float]:
    """(b) the project's path: MemoryManager.ingest_message + flush; also the worst loop stall."""
    manager = MemoryManager(engine, Settings(_env_file=None))  # type: ignore[call-arg]
    if writer is not None:
        manager.queue.committer.writer = writer(engine)  # a variant of the same queue, for comparison
    await manager.start()
    with StallMeter() as meter:
        started = time.perf_counter()
        for m in messages:
            await manager.intake.message(m, wait=True)  # back-pressure: measure storage, not the disk
            # Each gateway message is its own event: without this the producer held the loop for a whole queue's
            # worth of messages while there was room, and the stall measured the benchmark, not the bot.
            await asyncio.sleep(0)
        await manager.flush()
        rate = len(messages) / (time.perf_counter() - started)
    await manager.close()
    return rate, meter.worst


def one_transaction(path: Path, messages: list[IncomingMessage]) -> float:
    """(c) the same SQL and indexing as (b) in one transaction on a sqlite3 connection: no queue, no loop."""
    conn = sqlite3.connect(path, isolation_level=None)
    tune_sqlite(conn, None)
    batch = SqliteBatch(SQLiteDialect_aiosqlite())
    started = time.perf_counter()
    batch.commit(conn, messages)
    rate = len(messages) / (time.perf_counter() - started)
    conn.close()
    return rate


def bare_driver(path: Path, messages: list[IncomingMessage]) -> float:
    """(d) sqlite3.executemany of tuples built before the clock into a table without keys or indexes."""
    return step(path, messages, [_PLAIN], _PLAIN_INSERT, SqliteBatch(SQLiteDialect_aiosqlite()))


_COLUMNS = (
    "message_id BIGINT NOT NULL, guild_id BIGINT NOT NULL, channel_id BIGINT NOT NULL, user_id BIGINT NOT NULL, "
    "message_text TEXT NOT NULL, timestamp DATETIME NOT NULL, edited_at DATETIME, reply_to_id BIGINT, "
    "kind SMALLINT DEFAULT '0' NOT NULL"
)
_SECONDARY = [  # chat_history's own (db/models.py): what reads need
    "CREATE INDEX ix_guild_user_ts ON chat_history (guild_id, user_id, timestamp)",
    "CREATE INDEX ix_guild_ts ON chat_history (guild_id, timestamp)",
    "CREATE INDEX ix_channel_message ON chat_history (channel_id, message_id)",
    "CREATE INDEX ix_reply_to ON chat_history (reply_to_id)",
]
_INSERT = "INSERT INTO chat_history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


def step(path: Path, messages: list[IncomingMessage], schema: list[str], sql: str | None, batch: SqliteBatch) -> float:
    """One transaction of pre-built rows into `schema` with `sql` (None: `batch`, rows built in the clock)."""
    conn = sqlite3.connect(path, isolation_level=None)
    tune_sqlite(conn, None)
    for statement in schema:
        conn.execute(statement)
    rows = batch.prepare(messages)[0][1]
    started = time.perf_counter()
    if sql is None:
        batch.commit(conn, messages)
    else:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
    rate = len(messages) / (time.perf_counter() - started)
    conn.close()
    return rate


async def breakdown(messages: list[IncomingMessage], repeat: int) -> list[list[str]]:
    """Where (c)'s time goes beyond the bare driver: one transaction, one thing added at a time."""
    dialect = SQLiteDialect_aiosqlite()
    batch, unindexed = SqliteBatch(dialect), _NoIndex(dialect)
    keyed = [f"CREATE TABLE chat_history ({_COLUMNS}, PRIMARY KEY (message_id))"]
    steps: list[tuple[str, list[str] | None, str | None, SqliteBatch]] = [
        ("plain table (d)", [f"CREATE TABLE chat_history ({_COLUMNS})"], _INSERT, batch),
        ("+ primary key (message_id)", keyed, _INSERT, batch),
        ("+ the four secondary indexes", [*keyed, *_SECONDARY], _INSERT, batch),
        ("INSERT … ON CONFLICT DO NOTHING (the writer's)", [*keyed, *_SECONDARY], batch._insert_new, batch),
        (
            "the same on the migrated schema (its other triggers; no full-text index)",
            None,
            batch._insert_new,
            unindexed,
        ),
        ("+ member names, rows built from the messages in the clock", None, None, unindexed),
        ("+ full-text index fed per batch (c)", None, None, batch),
    ]
    runs: list[list[float]] = [[] for _ in steps]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for r in range(repeat):
            for i, (_, schema, sql, writer) in enumerate(steps):
                if schema is not None:
                    runs[i].append(step(directory / f"step-{r}-{i}.db", messages, schema, sql, writer))
                    continue
                async with sqlite_engine(directory) as engine:
                    if writer is unindexed:
                        await _unindexed_sqlite(engine)
                    runs[i].append(step(Path(engine.url.database or ""), messages, [], sql, writer))
    bare = median(runs[0])
    table, before = [], bare
    for (label, *_), values in zip(steps, runs, strict=True):
        value, spread = _figure(values)
        rate = median(values)
        table.append([label, value, spread, f"{rate / bare:.2f}", f"+{1e6 / rate - 1e6 / before:.1f} µs"])
        before = rate
    return table


async def _unindexed_sqlite(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("DROP TRIGGER chat_fts_insert"))


async def _unindexed_pg(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("ALTER TABLE chat_history DROP COLUMN search"))  # its GIN index goes with it


Runs = dict[str, list[float]]


async def measure_sqlite(messages: list[IncomingMessage], repeat: int, runs: Runs) -> float:
    """Every SQLite row, `repeat` alternating runs each (each on a fresh database); (a) once. The worst stall."""
    stall = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        async with sqlite_engine(directory) as engine:
            runs["a"].append(await naive(engine, messages))
        for _ in range(repeat):
            async with sqlite_engine(directory) as engine:
                rate, worst = await write_behind(engine, messages)
                runs["b"].append(rate)
                stall = max(stall, worst)
            async with sqlite_engine(directory) as engine:
                runs["bt"].append((await write_behind(engine, messages, TriggerWriter))[0])
            async with sqlite_engine(directory) as engine:
                await _unindexed_sqlite(engine)
                runs["b0"].append((await write_behind(engine, messages, UnindexedWriter))[0])
            async with sqlite_engine(directory) as engine:
                runs["c"].append(one_transaction(Path(engine.url.database or ""), messages))
            runs["d"].append(bare_driver(directory / f"plain-{len(runs['d'])}.db", messages))
    return stall


async def measure_postgres(url: str, messages: list[IncomingMessage], repeat: int, runs: Runs) -> float:
    """(b) and (b0) on PostgreSQL, alternating; the worst stall of (b)."""
    stall = 0.0
    for _ in range(repeat):
        async with postgres_engine(url) as engine:
            rate, worst = await write_behind(engine, messages)
            runs["pg_b"].append(rate)
            stall = max(stall, worst)
        async with postgres_engine(url) as engine:
            await _unindexed_pg(engine)
            runs["pg_b0"].append((await write_behind(engine, messages))[0])
    return stall


def _figure(values: list[float]) -> tuple[str, str]:
    if not values:
        return "—", ""
    if len(values) == 1:
        return f"{values[0]:,.0f}", "one run"
    return f"{median(values):,.0f}", f"{min(values):,.0f}–{max(values):,.0f}"


def _ingest_rows(runs: Runs, stall: float, pg_note: str) -> list[list[str]]:
    """One row per write path: messages/s, its spread and stall, and its share of the bare driver's rate."""
    bare = median(runs["d"])
    labels = {
        "a": "(a) naive INSERT+COMMIT per message, SQLite",
        "b": "(b) write-behind batches, SQLite, full-text index fed per batch",
        "bt": "(bt) write-behind batches, SQLite, full-text index fed by the per-row trigger (before)",
        "b0": "(b0) write-behind batches, SQLite, no full-text index",
        "c": "(c) same SQL and indexing as (b), one transaction, no queue",
        "d": "(d) bare driver: plain table, no keys or indexes, pre-built tuples",
        "pg_b": "(b) write-behind batches, PostgreSQL (tsvector column + GIN)",
        "pg_b0": "(b0) write-behind batches, PostgreSQL, no search column",
    }
    rows = []
    for key, label in labels.items():
        value, spread = _figure(runs[key])
        note = spread + (f"; longest loop stall {stall * 1000:.1f} ms" if key == "b" else "")
        note += pg_note if key == "pg_b" else ""
        ratio = f"{median(runs[key]) / bare:.2f}" if runs[key] else ""
        rows.append([label, value, note, ratio])
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5, help="runs of every row but (a); medians are printed")
    parser.add_argument("--pg", default="postgresql+asyncpg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    messages = make_messages(args.messages)
    runs: Runs = {key: [] for key in ("a", "b", "bt", "b0", "c", "d", "pg_b", "pg_b0")}
    stall = await measure_sqlite(messages, args.repeat, runs)
    try:
        stall_pg = await measure_postgres(args.pg, messages, args.repeat, runs)
        pg_note = f"; longest loop stall {stall_pg * 1000:.1f} ms"
    except OSError as exc:
        pg_note = f"; skipped: unreachable ({exc})"
    rows = _ingest_rows(runs, stall, pg_note)
    print_table(
        f"Ingest, {args.messages:,} messages (messages/s; median of {args.repeat}, min–max)",
        ["path", "msg/s", "min–max / note", "÷ bare driver"],
        rows,
    )

    print_table(
        f"Where the time goes: one transaction of {args.messages:,} messages, one thing added at a time "
        f"(median of {args.repeat}, min–max)",
        ["SQLite", "msg/s", "min–max", "÷ bare driver", "added per message"],
        await breakdown(messages, args.repeat),
    )

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    b, bt, b0, c, a = (median(runs[k]) for k in ("b", "bt", "b0", "c", "a"))
    print_table(
        "Targets",
        ["measure", "measured", "target", ""],
        [
            ["b, SQLite with the full-text index", f"{b:,.0f} msg/s", "≥ 40,000", verdict(b >= 40_000)],
            ["b/a", f"{b / a:.1f}", "≥ 20", verdict(b / a >= 20)],
            ["c/b", f"{c / b:.2f}", "≤ 2", verdict(c / b <= 2)],
            ["b/bt (index per batch vs per-row trigger)", f"{b / bt:.2f}", "(> 1: keep per batch)", ""],
            ["b/b0 (what the index leaves)", f"{b / b0:.2f}", "(reference)", ""],
            ["stall (b, SQLite)", f"{stall * 1000:.1f} ms", "< 50 ms", verdict(stall < 0.05)],
        ],
    )


if __name__ == "__main__":
    asyncio.run(main())
