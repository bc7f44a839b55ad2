"""Spans db/migrations/ and db/models.py: the migrations give one schema on SQLite and PostgreSQL, the models'."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect
from sqlalchemy.engine import make_url

from db.engine import create_engine
from db.models import Base
from db.search.fts import SEARCH_COLUMN, SEARCH_TABLE_PREFIXES


def is_modelled(name: str | None, kind: str, _parent: object = None) -> bool:
    """False for the search objects each database implements its own way (FTS5 tables, tsvector columns)."""
    name = name or ""
    if kind == "table":
        return not name.startswith(SEARCH_TABLE_PREFIXES)
    if kind == "column":
        return name != SEARCH_COLUMN
    if kind == "index":
        return not name.endswith("_" + SEARCH_COLUMN)
    return True


def _describe(connection: Connection) -> dict[str, Any]:
    inspector = inspect(connection)
    schema: dict[str, Any] = {}
    for table in sorted(t for t in inspector.get_table_names() if is_modelled(t, "table")):
        columns = {}
        for col in inspector.get_columns(table):
            if not is_modelled(col["name"], "column"):
                continue
            generic = type(col["type"].as_generic()).__name__
            # Surrogate keys are INTEGER on SQLite by design (it only auto-fills INTEGER PRIMARY KEY).
            if col["name"] == "id" and generic in {"Integer", "BigInteger"}:
                generic = "SurrogateKey"
            columns[col["name"]] = (generic, getattr(col["type"], "length", None), col["nullable"])
        schema[table] = {
            "columns": columns,
            "pk": inspector.get_pk_constraint(table)["constrained_columns"],
            "indexes": sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                for i in inspector.get_indexes(table)
                # PostgreSQL also lists the index behind each unique constraint.
                if not i.get("duplicates_constraint") and is_modelled(i["name"], "index")
            ),
            "unique": sorted(tuple(u["column_names"]) for u in inspector.get_unique_constraints(table)),
        }
    return schema


def _model_diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True, "include_name": is_modelled})
    return compare_metadata(context, Base.metadata)


async def _inspect(url: str) -> tuple[dict[str, Any], list[Any]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_describe), await conn.run_sync(_model_diff)
    finally:
        await engine.dispose()


def test_sqlite_and_postgresql_schemas_are_equal(sqlite_template, pg_database):
    sqlite_schema, _ = asyncio.run(_inspect(f"sqlite+aiosqlite:///{sqlite_template}"))
    pg_schema, _ = asyncio.run(_inspect(pg_database))
    assert "chat_history" in sqlite_schema
    assert sqlite_schema == pg_schema
    assert make_url(pg_database).get_backend_name() == "postgresql"


def test_migrations_match_the_models_on_both_databases(sqlite_template, pg_database):
    for url in (f"sqlite+aiosqlite:///{sqlite_template}", pg_database):
        _, diff = asyncio.run(_inspect(url))
        assert diff == [], f"{url}: models and migrations disagree: {diff}"
