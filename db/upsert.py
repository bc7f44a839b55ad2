"""One INSERT with ON CONFLICT for both databases (the dialects spell it the same way)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def dialect_insert(session: AsyncSession, table: Any) -> Any:
    """`insert(table)` of the session's dialect, which has `.on_conflict_do_nothing / _do_update`."""
    dialect = session.bind.dialect.name  # type: ignore[union-attr]
    return (postgresql if dialect == "postgresql" else sqlite).insert(table)
