"""Apply Alembic migrations programmatically, from start-up, the CLI and tests."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Any constant works; it only has to be the same for every Elefant process sharing a PostgreSQL database.
_PG_MIGRATION_LOCK = 0x456C6566616E74


def alembic_config() -> Config:
    """An Alembic config pointing at this package's migrations (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def _upgrade(connection: Connection, revision: str) -> None:
    if connection.dialect.name == "postgresql":
        # Several bot processes may start at once against one database: migrate one at a time, waiting as long as
        # the one migrating takes (and its DDL for the locks other processes hold), not db/engine.py's lock_timeout.
        connection.execute(text("SET LOCAL lock_timeout = 0"))
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Bring the database behind `engine` to `revision` (default: the newest)."""
    async with engine.begin() as connection:
        await connection.run_sync(_upgrade, revision)
    log.debug("database schema is at %s", revision)
