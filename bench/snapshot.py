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


@asynccontextmanager
async def kept(engine: AsyncEngine, folder: Path) -> AsyncIterator[str]:
    """A copy of the database as it is now (its URL), gone afterwards: what is committed, its file `VACUUM INTO`
    `folder` (SQLite), or dumped there and restored into a database of its own (PostgreSQL's pg_dump and
    pg_restore, the server's client tools)."""
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
    server = url.set(drivername="postgresql")
    admin = await asyncpg.connect(server.set(database="postgres").render_as_string(False))
    dump = folder / f"{name}.dump"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        copy = server.set(database=name).render_as_string(False)
        # pg_dump reads one consistent snapshot beside the connections the bot holds open (its LISTEN, its pool),
        # which a template copy would have had to close; the planner's statistics are not dumped: ANALYZE anew.
        await _run("pg_dump", "--format=custom", f"--file={dump}", f"--dbname={server.render_as_string(False)}")
        await _run("pg_restore", "--no-owner", f"--dbname={copy}", str(dump))
        analyzing = await asyncpg.connect(copy)
        try:
            await analyzing.execute("ANALYZE")
        finally:
            await analyzing.close()
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        dump.unlink(missing_ok=True)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def _run(*command: str) -> None:
    done = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.PIPE)
    _, err = await done.communicate()
    if done.returncode:
        raise RuntimeError(f"{command[0]} failed: {err.decode(errors='replace').strip()}")
