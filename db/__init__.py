"""Storage: SQLAlchemy 2 async models, engine and session factory, data access, Alembic migrations.

Where the `pysqlite3` package is installed (a dependency on Linux x86-64), it replaces the standard library's
`sqlite3` for every SQLite connection of the process, before any driver imports it: it bundles a current
SQLite (3.51) with FTS5 `secure-delete`, so deleted words leave the full-text index's pages too, and with
extension loading. Elsewhere the system SQLite is used and deletions compact the index instead.
"""

from __future__ import annotations

import sys

try:
    import pysqlite3.dbapi2 as _bundled  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - platforms without the wheel keep the system SQLite
    pass
else:
    if "aiosqlite" not in sys.modules:  # a driver that already imported sqlite3 would keep the old one
        sys.modules["sqlite3"] = _bundled
        sys.modules["sqlite3.dbapi2"] = _bundled
