"""The recap's reads (db/recap.py, and the stored summaries it adds) compose the read scope: in the scope probe's
guild a recap asked in the public channel shows what is visible there and no hidden marker, and removing any one
filter it relies on makes a hidden marker appear in a recap."""

from __future__ import annotations

import pytest

from bot.settings import Settings
from db import scope
from db.engine import create_engine
from tests import scope_probe
from tests.conftest import _truncate_pg

RELIED_ON = [("MESSAGES", name) for name in scope.MESSAGES] + [("DERIVED", "optout")]


async def test_a_recap_shows_what_is_visible_here_and_nothing_hidden(engine, settings):
    memory = await scope_probe.build(engine, settings)
    try:
        shown = await scope_probe.recaps(memory)
    finally:
        await memory.close()
    assert "kiwi smoothie day 0" in shown and "kiwi smoothie day 2" in shown
    assert [marker for marker in scope_probe.MARKERS if marker in shown] == []


@pytest.mark.parametrize(("kind", "name"), RELIED_ON, ids=[f"{k}-{n}" for k, n in RELIED_ON])
async def test_removing_a_filter_a_recap_relies_on_leaks_into_a_recap(kind, name, pg_database, monkeypatch):
    await _truncate_pg(pg_database)
    monkeypatch.setattr(scope, kind, tuple(f for f in getattr(scope, kind) if f != name))
    engine = create_engine(pg_database)
    settings = Settings(_env_file=None, database_url=pg_database, gemini_api_key=None, discord_token=None)
    memory = await scope_probe.build(engine, settings)
    try:
        shown = await scope_probe.recaps(memory)
    finally:
        await memory.close()
        await engine.dispose()
    assert [marker for marker in scope_probe.MARKERS if marker in shown], (
        f"removing {name!r} from {kind} leaked nothing"
    )
