"""Reading stored summaries while another process stores them."""

from __future__ import annotations

from datetime import UTC, date, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from db.engine import create_session_factory
from db.summaries import save_day, stored_day
from tests.factories import ALICE, GUILD

DAY = date(2026, 11, 19)


async def test_a_day_stored_while_it_is_read_is_never_read_as_summarised_with_nothing(engine, monkeypatch):
    """A process waiting for another's build polls the day; the build committing in the middle of that read must
    read as "not yet" or as the summaries, never as a day summarised with nothing readable (on PostgreSQL each
    statement reads what was committed before it)."""
    sessions = create_session_factory(engine)
    original = AsyncSession.execute
    stored = False

    async def execute(self, *args, **kwargs):  # the other process commits right after the reader's first statement
        nonlocal stored
        result = await original(self, *args, **kwargs)
        if not stored:
            stored = True
            async with sessions() as other, other.begin():
                at = datetime(2026, 11, 20, tzinfo=UTC)
                await save_day(other, GUILD, DAY, {ALICE: "said hi"}, model="m", version="1", at=at)
        return result

    monkeypatch.setattr(AsyncSession, "execute", execute)
    async with sessions() as session:
        found = await stored_day(session, GUILD, DAY)
    assert stored
    assert found in (None, {ALICE: "said hi"})
    async with sessions() as session:
        assert await stored_day(session, GUILD, DAY) == {ALICE: "said hi"}
