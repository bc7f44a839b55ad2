"""Shared helpers for benchmarks: fresh migrated databases, a loop-stall meter, table printing."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from db.engine import create_engine
from db.migrate import upgrade


@asynccontextmanager
async def sqlite_engine(directory: Path, *, reuse: Path | None = None) -> AsyncIterator[AsyncEngine]:
    """A migrated SQLite file of its own (or `reuse`, an earlier one)."""
    path = reuse or directory / f"bench-{uuid.uuid4().hex[:8]}.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    await upgrade(engine)
    try:
        yield engine
    finally:
        await engine.dispose()


@asynccontextmanager
async def postgres_engine(base_url: str) -> AsyncIterator[AsyncEngine]:
    """A migrated PostgreSQL database of its own, dropped afterwards."""
    name = f"elefant_bench_{uuid.uuid4().hex[:8]}"
    admin = make_url(base_url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(admin, timeout=3)
    await conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(base_url).set(drivername="postgresql+asyncpg", database=name)  # a plain postgresql:// too
    engine = create_engine(url.render_as_string(hide_password=False))
    try:
        await upgrade(engine)
        yield engine
    finally:
        await engine.dispose()
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


class StallMeter:
    """A 1 ms ticker; the longest gap between ticks is the worst event-loop stall."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last - 0.001)
            last = now

    def __enter__(self) -> StallMeter:
        self._task = asyncio.create_task(self._tick())
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()


def print_table(title: str, headers: list[str], rows: list[list[str]]) -> None:
    """Print a Markdown table, ready to paste into the README."""
    print(f"\n{title}\n")
    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" for _ in headers) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
