"""SQLite's secure_delete on every connection the bot opens: what a DELETE removes is zeroed in the file at once.

The residue tests (tests/memory/test_residue.py) pass without it, because a rewrite of the file (VACUUM) follows
deletions some minutes later; these fail without it. Tests db/engine.py's `tune_sqlite`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import text

from db.engine import create_engine
from db.messages import SqliteBatchWriter

SECRET = "persimmon-vault-code-31-41-59"


async def test_every_connection_of_the_engine_and_the_ingest_writer_deletes_securely(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/secure.db")
    writer = SqliteBatchWriter(engine)
    try:
        async with engine.connect() as connection:
            assert (await connection.execute(text("PRAGMA secure_delete"))).scalar() == 1
        await writer.write([])  # it opens its own sqlite3 connection, in its own thread, on its first batch
        own = writer._connection
        assert own is not None
        pragma = await asyncio.get_running_loop().run_in_executor(
            writer._thread, lambda: own.execute("PRAGMA secure_delete").fetchone()
        )
        assert pragma == (1,)
    finally:
        await writer.close()
        await engine.dispose()


async def test_deleted_text_leaves_the_file_before_any_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "secure.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE said (id INTEGER PRIMARY KEY, words TEXT)"))
            for i in range(200):  # pages of it, so that deleting them frees whole pages too
                await connection.execute(text("INSERT INTO said (words) VALUES (:w)"), {"w": f"{SECRET} {i} " * 8})
            await connection.execute(text("INSERT INTO said (words) VALUES ('kept')"))
        async with engine.begin() as connection:
            await connection.execute(text("DELETE FROM said WHERE words != 'kept'"))
        async with engine.connect() as connection:
            # The log's frames go back into the file, and the log is emptied: only the file holds bytes now.
            busy, _, _ = (await connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))).one()
            assert busy == 0
            assert (await connection.execute(text("SELECT count(*) FROM said"))).scalar() == 1
    finally:
        await engine.dispose()
    wal = path.with_name(path.name + "-wal")
    data = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert b"kept" in data  # the search itself works
    assert SECRET.encode() not in data
