"""A benchmark's database as it was at one moment, kept beside the living one so later moments can be timed against
it in turn: this machine's pace drifts by a third within minutes, and two checkpoints of bench.soak timed twenty
minutes apart gave a ratio that said as much about the machine as about the guild."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine

COPY_TRIES = 40  # PostgreSQL copies a database only while nobody is connected to it (autovacuum may be, briefly)


@asynccontextmanager
async def kept(engine: AsyncEngine, folder: Path) -> AsyncIterator[str]:
    """A copy of the database as it is now (its URL), gone afterwards. The database must be idle: SQLite copies
    what is committed; PostgreSQL needs every connection to it closed (this engine's pool is emptied)."""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        path = folder / f"snapshot-{uuid.uuid4().hex[:8]}.db"
        async with engine.connect() as conn:
            live = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await live.exec_driver_sql(f"VACUUM INTO '{path}'")  # one consistent copy, compacted
        try:
            yield url.set(database=str(path)).render_as_string(hide_password=False)
        finally:
            path.unlink(missing_ok=True)
        return
    name = f"{url.database}_kept"
    admin = await asyncpg.connect(url.set(drivername="postgresql", database="postgres").render_as_string(False))
    try:
        await engine.dispose()  # its connections are reopened when next needed
        for attempt in range(COPY_TRIES):
            try:
                await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{url.database}"')
                break
            except asyncpg.ObjectInUseError:
                if attempt == COPY_TRIES - 1:
                    raise
                await asyncio.sleep(0.25)
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
