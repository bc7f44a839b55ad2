"""The async engine and how session factories are made from it; SQLite is tuned on every connection."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from db.asyncpg_quirks import read_lost_tls_answers

SQLITE_BUSY_TIMEOUT_MS = 5000
# PostgreSQL: how long a statement waits for a lock held elsewhere before it fails with SQLSTATE 55P03 (a busy
# database: the transaction is retried, db/busy.py), and how long a session may sit inside a transaction without
# a statement before the server ends it. A process frozen mid-transaction (SIGSTOP, a debugger, a VM paused) then
# delays the others' writes by seconds, not for as long as it stays frozen: its locks go with its session. Nothing
# of Elefant holds a transaction open across a model call or any other wait (db/migrate.py waits on purpose).
PG_SERVER_SETTINGS = {"lock_timeout": "2s", "idle_in_transaction_session_timeout": "10s"}


def tune_sqlite(dbapi_connection: Any, _record: object) -> None:
    # WAL lets readers work during the ingest writer's transactions; NORMAL is durable enough with WAL
    # and roughly doubles small-commit throughput. A larger auto-checkpoint (≈ 40 MB of WAL instead of 4)
    # stops bursts of 1,000-row commits from paying a checkpoint every few batches (+25 % ingest).
    """Apply the pragmas every SQLite connection of the bot uses."""
    cursor = dbapi_connection.cursor()
    for pragma in (
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
        f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
        "PRAGMA foreign_keys=ON",
        "PRAGMA secure_delete=ON",  # deleted means gone from the file too: freed space is zeroed
        "PRAGMA wal_autocheckpoint=10000",
    ):
        cursor.execute(pragma)
    try:
        cursor.execute("SELECT exp(0.0)")  # recall ranking; SQLite builds without math functions lack it
    except Exception:  # noqa: BLE001 - the driver's OperationalError, whichever driver wraps it
        dbapi_connection.create_function("exp", 1, math.exp, deterministic=True)
    cursor.close()
    driver = getattr(dbapi_connection, "_connection", None)  # aiosqlite's connection inside SQLAlchemy's adapter
    if driver is not None and hasattr(driver, "in_transaction"):
        _skip_empty_rollbacks(driver)


def _skip_empty_rollbacks(driver: Any) -> None:
    """Roll back only a transaction that is open. A session's end and the pool's reset each roll back; after
    reads none is open (SQLite's Python driver opens one for writes only) and the driver's rollback does nothing,
    but through aiosqlite each still waits its turn on the connection's thread: two trips per session, each
    slower on a busy machine (where a reply opens five or six sessions)."""
    rollback = driver.rollback

    async def rollback_if_open() -> None:
        if driver.in_transaction:
            await rollback()

    driver.rollback = rollback_if_open


def create_engine(database_url: str, **kwargs: Any) -> AsyncEngine:
    """Open an async engine for `database_url` (sqlite+aiosqlite or postgresql+asyncpg)."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, **kwargs)
        event.listen(engine.sync_engine, "connect", tune_sqlite)
        return engine
    read_lost_tls_answers()
    kwargs.setdefault("pool_pre_ping", True)
    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args["server_settings"] = {**PG_SERVER_SETTINGS, **connect_args.get("server_settings", {})}
    return create_async_engine(url, connect_args=connect_args, **kwargs)


def create_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """A session factory for units of work (memory has one, the model's usage writer another); objects stay readable
    after commit."""
    return async_sessionmaker(engine, expire_on_commit=False)


async def ping(engine: AsyncEngine) -> None:
    """One trivial statement on a connection from the pool: raises when the database does not answer it."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
