"""Making deleted data physically gone: after deletions, nothing of it stays in the database files.

SQLite keeps deleted content in three places the rows no longer show: freed pages (PRAGMA secure_delete,
set on every connection, zeroes them), the full-text index's segments (FTS5 `secure-delete`, set by migration
0008 where SQLite is 3.44 or newer, removes a deleted row's tokens at once; older SQLite gets an `optimize`,
which rewrites the index without them) and the write-ahead log, whose old frames still hold the pages as they
were until a checkpoint copies the log back and truncates it. PostgreSQL's dead tuples are reclaimed by
autovacuum; nothing here for it.

Both databases also keep copies of values in their planner statistics: SQLite's `sqlite_stat4` samples index keys
(a member's name, a guild and member id), PostgreSQL's `pg_statistic` (the `pg_stats` view) most common values and
histogram bounds of every column (message text, names). They stay after the rows are gone until the next ANALYZE,
so `analyze` takes them again after every deletion (before the scrub and the file's rewrite, which then carry no
page of the old ones). Keeping statistics true to the tables' sizes is db/statistics.py's job.

`secure_delete` zeroes a cell when it is deleted, but not every copy SQLite ever made of it: when an UPDATE grows
a row (an edit, a redaction that rewrites mentions) and its page is rebalanced, the rebuilt page can keep stale
bytes of moved cells in its unused gap, and a later DELETE zeroes only the live copy (seen here on a 50,000-
message guild: a forgotten member's edited words were still in the file after forget-me). Only rewriting the
file removes those, so `compact` (VACUUM) runs some minutes after deletions and edits, once for a burst of them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

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


async def analyze(engine: AsyncEngine, tables: Iterable[str]) -> None:
    """Take the planner's statistics of `tables` again, so no sample of deleted rows stays in them.

    In full, not sampled (db/statistics.py says why). PostgreSQL leaves the statistics of a table that has no row left
    as they were (ANALYZE writes only what a sample of at least one row gives); those are removed where the
    role may (a superuser), or else they stay until the table has rows and autovacuum analyses it again.
    """
    names = list(tables)
    if not names:
        return
    async with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            for table in names:
                await connection.execute(text(f"ANALYZE {table}"))
        else:
            # It waits only for another ANALYZE of these tables (never for writers): as long as that one takes.
            await connection.execute(text("SET LOCAL lock_timeout = 0"))
            await connection.execute(text(f"ANALYZE {', '.join(names)}"))
            await _clear_emptied(connection, names)
        await connection.commit()


async def _clear_emptied(connection: AsyncConnection, tables: list[str]) -> None:
    empty = [t for t in tables if not (await connection.execute(text(f"SELECT EXISTS (SELECT 1 FROM {t})"))).scalar()]
    if not empty:
        return
    superuser = await connection.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
    if not superuser.scalar():
        log.warning(
            "the planner's statistics of the emptied tables %s keep samples of deleted rows until they hold "
            "rows again (removing them needs a superuser)",
            empty,
        )
        return
    await connection.execute(
        text("DELETE FROM pg_statistic WHERE starelid = ANY(CAST(:tables AS regclass[]))"), {"tables": empty}
    )
