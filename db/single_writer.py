"""One bot process per SQLite file: a lock file next to the database, held while the bot (or its console) runs.

Several processes share a PostgreSQL database safely (claims, advisory locks, the change feed), but SQLite
admits one writer at a time, and two bots on one file would each summarise the same days and fight the
other's ingest writer in the busy handler. So a second bot process is refused at start, in one sentence.
Short CLI commands (stats, export, context, recall, purge, import) do not take the lock: they still work
beside a running bot. The lock is an OS lock (filelock: flock, or msvcrt on Windows), so a crashed process
leaves nothing held.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout
from sqlalchemy.engine import make_url


class DatabaseInUseError(Exception):
    """Another process already runs the bot on this SQLite file."""


def lock_path(database_url: str) -> Path | None:
    """Where the lock of a SQLite database lives (None: not SQLite)."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        return None
    database = Path(url.database).expanduser().absolute()
    return database.with_name(database.name + ".lock")


@contextlib.contextmanager
def sole_writer(database_url: str) -> Iterator[None]:
    """Hold the SQLite file's lock for the duration; DatabaseInUseError at once if another process holds it."""
    path = lock_path(database_url)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise DatabaseInUseError(
            f"Another Elefant bot or console is already running on {path.with_suffix('')}: stop it first, or use "
            "PostgreSQL (DATABASE_URL) to run several processes on one database."
        ) from None
    try:
        yield
    finally:
        lock.release()
