"""The read scope holds on every read path, on both databases, and each of its filters is needed.

`probe` reads G's public channel through recall (messages and summaries), the vector path, contexts, an export
and stats. Without changes, none of the hidden markers shows and the visible word does. Then each filter of
each kind of read is removed in turn (db/scope.py is the only place they are written), and a leak must show
on at least one database: no filter is dead code, and no read path goes around the scope.
"""

from __future__ import annotations

import pytest

from bot.settings import Settings
from db import scope
from db.engine import create_engine
from tests import scope_probe
from tests.conftest import _truncate_pg

KINDS = {
    "MESSAGES": scope.MESSAGES,
    "SUMMARY_INPUT": scope.SUMMARY_INPUT,
    "DERIVED": scope.DERIVED,
    "GUILD": scope.GUILD,
}
MUTATIONS = [(kind, name) for kind, filters in KINDS.items() for name in filters]


@pytest.mark.parametrize("vectors", [False, True], ids=["text", "hybrid"])
async def test_no_hidden_marker_reaches_any_read_path(engine, settings, vectors):
    memory = await scope_probe.build(engine, settings, vectors=vectors)
    try:
        found = await scope_probe.probe(memory)
    finally:
        await memory.close()
    assert found.visible
    assert found.leaks == {}


@pytest.mark.parametrize(("kind", "name"), MUTATIONS, ids=[f"{k}-{n}" for k, n in MUTATIONS])
async def test_removing_any_single_filter_leaks(kind, name, pg_database, monkeypatch):
    # On PostgreSQL: SQLite's full-text index also carries a guild token, a second guild filter that would
    # hide a missing SQL one (the probe above still runs on both).
    await _truncate_pg(pg_database)
    monkeypatch.setattr(scope, kind, tuple(f for f in KINDS[kind] if f != name))
    engine = create_engine(pg_database)
    settings = Settings(_env_file=None, database_url=pg_database, gemini_api_key=None, discord_token=None)
    memory = await scope_probe.build(engine, settings, vectors=kind == "MESSAGES")
    try:
        found = await scope_probe.probe(memory)
    finally:
        await memory.close()
        await engine.dispose()
    assert found.leaks, f"removing {name!r} from {kind} leaked nothing: that filter is never exercised"
