"""Making deleted data physically gone: after deletions, nothing of it stays in the database files.

SQLite keeps deleted content in three places the rows no longer show: freed pages (PRAGMA secure_delete,
set on every connection, zeroes them), the full-text index's segments (FTS5 `secure-delete`, set by migration
0008 where SQLite is 3.44 or newer, removes a deleted row's tokens at once; older SQLite gets an `optimize`,
which rewrites the index without them) and the write-ahead log, whose old frames still hold the pages as they
were until a checkpoint copies the log back and truncates it. PostgreSQL's dead tuples are reclaimed by
autovacuum; nothing here for it.

`secure_delete` zeroes a cell when it is deleted, but not every copy SQLite ever made of it: when an UPDATE grows
a row (an edit, a redaction that rewrites mentions) and its page is rebalanced, the rebuilt page can keep stale
bytes of moved cells in its unused gap, and a later DELETE zeroes only the live copy (seen here on a 50,000-
message guild: a forgotten member's edited words were still in the file after forget-me). Only rewriting the
file removes those, so `compact` (VACUUM) runs some minutes after deletions and edits, once for a burst of them.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)
SEARCH_TABLES = ("chat_fts", "summary_fts")
_ATTEMPTS = 5


async def scrub(engine: AsyncEngine) -> bool:
    """Compact what deletions left behind; True when the write-ahead log is empty afterwards."""
    if engine.dialect.name != "sqlite":
        return True
    async with engine.connect() as connection:
        if not await _secure_fts(connection):
            for table in SEARCH_TABLES:
                await connection.execute(text(f"INSERT INTO {table}({table}) VALUES ('optimize')"))
            await connection.commit()
        for _ in range(_ATTEMPTS):  # a reader holding an old snapshot keeps the log busy for a moment
            busy, _, _ = (await connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))).one()
            if not busy:
                return True
            await asyncio.sleep(0.05)
    log.warning("the write-ahead log stayed busy; deleted pages leave it at the next checkpoint")
    return False


async def _secure_fts(connection: object) -> bool:
    row = await connection.execute(  # type: ignore[attr-defined]
        text("SELECT v FROM chat_fts_config WHERE k = 'secure-delete'")
    )
    value = row.scalar()
    return bool(value)


async def compact(engine: AsyncEngine) -> bool:
    """Rewrite the SQLite file without a byte of what was deleted (a VACUUM), then empty the write-ahead log.

    Costs about as much as copying the file once (bench.scrub); readers go on meanwhile, writers wait for it.
    """
    if engine.dialect.name != "sqlite":
        return True
    async with engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await autocommit.execute(text("VACUUM"))
    return await scrub(engine)


async def needs_compacting(engine: AsyncEngine) -> bool:
    """Whether pages were freed since the file was last rewritten: deletions whose bytes may linger."""
    if engine.dialect.name != "sqlite":
        return False
    async with engine.connect() as connection:
        return bool((await connection.execute(text("PRAGMA freelist_count"))).scalar())


async def optimize(engine: AsyncEngine) -> None:
    """Keep the query planner's statistics current (SQLite; PostgreSQL's autovacuum analyses by itself).

    Without them SQLite reads a whole guild through the guild index to fetch a few hundred messages by id (a
    question's candidates: 10 ms at 20,000 messages, linear in the guild); with them it looks each one up.
    Cheap when nothing changed much since the last time. Not sampled (`analysis_limit`): a sample of 1,000
    rows told the planner one guild's rows were a thousand, and it read all 200,000 of them again (0.4 s to
    analyse 200,000 messages in full).
    """
    if engine.dialect.name != "sqlite":
        return
    async with engine.connect() as connection:
        await connection.execute(text("PRAGMA optimize=0x10002"))
        await connection.commit()
