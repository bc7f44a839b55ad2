"""The query planner's statistics kept true to the tables' sizes: after a bulk load, and as the tables grow.

Both databases plan a query from statistics taken by the last ANALYZE. Taken mid-import (or on a young guild)
they describe a few thousand rows of a table that now holds hundreds of thousands, and a plan that was right
then is wrong now: on SQLite a full-text join walked the (guild, time) index instead of looking messages up by
key, 2,222 ms for one search where fresh statistics give 3–34 ms (issue 36). SQLite's own PRAGMA optimize (3.51,
bundled by pysqlite3) analyses a table again only once it holds about ten times the rows its statistics say, and
plans flip well before that: statistics of 7,500 rows stayed on a table of 21,000. So `refresh` compares what the
statistics say each table holds with what it holds now, and analyses again the tables that changed size by more than
`DRIFT`. PostgreSQL's autovacuum analyses eventually, but not while a bulk load is under way; `refresh` does the same
there with what the planner believes (pg_class.reltuples).

Analysis is in full, not sampled: a sample of 1,000 rows told SQLite's planner one guild's rows were a thousand,
and it read all 200,000 of them again (0.4 s to analyse 200,000 messages in full).
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

log = logging.getLogger(__name__)
DRIFT = 1.5  # a table analysed again once it holds 1.5 times as many rows as its statistics say, or a 1.5th
SMALL = 200  # below this many rows either way, a plan's mistakes cost nothing worth an analysis


async def refresh(engine: AsyncEngine) -> list[str]:
    """Analyse again every table whose size drifted from its statistics; the tables analysed."""
    async with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            stale = await _sqlite_stale(connection)
            for table in stale:
                await connection.execute(text(f'ANALYZE "{table}"'))
        else:
            stale = await _postgres_stale(connection)
            if stale:
                await connection.execute(text("ANALYZE " + ", ".join(f'"{t}"' for t in stale)))
        await connection.commit()
    if stale:
        log.debug("planner statistics taken again for %s", ", ".join(stale))
    return stale


def drifted(analysed: float | None, now: int) -> bool:
    """Whether a table analysed at `analysed` rows (None: never) and holding `now` needs analysing again."""
    if analysed is None:
        return now > 0
    if max(analysed, now) < SMALL:
        return False
    low, high = sorted((max(analysed, 1.0), max(float(now), 1.0)))
    return high / low >= DRIFT


async def _sqlite_stale(connection: AsyncConnection) -> list[str]:
    tables = [
        name
        for (name,) in await connection.execute(
            text(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND name NOT LIKE '%fts_%'"
            )
        )
    ]
    analysed: dict[str, float] = {}
    if await connection.scalar(text("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")):
        # Each index's row in sqlite_stat1 starts with the number of rows the table had when analysed.
        for table, stat in await connection.execute(text("SELECT tbl, stat FROM sqlite_stat1")):
            if stat:
                analysed[table] = float(str(stat).split()[0])
    stale = []
    for table in tables:
        rows = int(await connection.scalar(text(f'SELECT count(*) FROM "{table}"')) or 0)
        if drifted(analysed.get(table), rows):
            stale.append(table)
    return stale


async def _postgres_stale(connection: AsyncConnection) -> list[str]:
    # reltuples is what the planner believes (-1: never analysed); the activity counters (n_live_tup,
    # n_mod_since_analyze) reach the shared statistics up to a second late, so the rows are counted.
    described = await connection.execute(
        text(
            "SELECT c.relname, c.reltuples FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname = current_schema()"
        )
    )
    stale = []
    for table, reltuples in described.all():
        rows = int(await connection.scalar(text(f'SELECT count(*) FROM "{table}"')) or 0)
        if drifted(None if reltuples < 0 else float(reltuples), rows):
            stale.append(str(table))
    return stale
