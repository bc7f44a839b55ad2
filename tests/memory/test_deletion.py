"""Spans memory's deletions and every store: after forget-me and purges nothing is left in any table or cache.

On both databases; every table is checked by query.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, text

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.summaries.rollups import periods
from db.deletion import remaining
from db.ingest_rows import DeadLetter as Refused
from db.messages import batch_writer_for
from db.models import ChatMessage, DailySummary, DeadLetter, HistoricalSummary, Rollup, UserFacts, UserOptOut
from fakes.models import model_stack
from tests.factories import ALICE, BOB, CHANNEL, GUILD, OTHER_GUILD, message
from tests.residue import files_with

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
SECRET = "alice's secret recipe"


@pytest.fixture
async def memory(engine, settings):
    settings = settings.model_copy(update={"memory_wait_seconds": 60})  # what is built, not the latency guard
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW))
    await memory.start()
    for back in (0, 1, 2, 3, 20, 45):  # today, the last week, and the weeks and months of the rollups
        day = NOW - timedelta(days=back, hours=3)
        await memory.intake.message(message(f"{SECRET} day {back}", author=ALICE, name="alice", at=day))
        await memory.intake.message(
            message(f"bob chats day {back}", author=BOB, name="bob", at=day + timedelta(minutes=1), channel=CHANNEL + 1)
        )
    await memory.intake.message(message("elsewhere", author=ALICE, name="alice", guild=OTHER_GUILD))
    await memory.flush()
    await memory.facts.remember(GUILD, ALICE, "alice loves paella", requested_by=BOB)
    await memory.facts.remember(GUILD, BOB, "bob is Sergey", requested_by=ALICE)
    # Warm every table and cache: past days, history, today, merged contexts.
    assert await memory.recollection.context(GUILD, ALICE)
    assert await memory.recollection.context(GUILD, BOB)
    yield memory
    await memory.close()


async def count(memory, model, **where) -> int:
    async with memory.sessions() as session:
        query = select(func.count()).select_from(model)
        for column, value in where.items():
            query = query.where(getattr(model, column) == value)
        return await session.scalar(query) or 0


async def test_forget_member_removes_every_row_and_cache(memory):
    assert await count(memory, DailySummary, guild_id=GUILD) > 0
    assert await count(memory, HistoricalSummary, guild_id=GUILD, user_id=ALICE) == 1
    assert memory.rollups is not None
    spans, _ = periods(NOW.date())
    spoken = {(NOW - timedelta(days=back, hours=3)).date() for back in (20, 45)}
    with_words = [p for p in spans if any(p.start <= d < p.end for d in spoken)]
    # Stored are the periods in which alice said something (a quiet period is not written about anyone).
    assert await count(memory, Rollup, guild_id=GUILD, user_id=ALICE) == len(with_words) == 2
    earlier = await memory.rollups.earlier(GUILD, ALICE, NOW.date())
    assert f"{SECRET} day 45" in earlier and f"{SECRET} day 20" in earlier
    counts = await memory.admin.forget_member(GUILD, ALICE)
    assert counts["chat_history"] == 6 and counts["user_facts"] == 1 and counts["fact_revisions"] == 1
    assert counts["fact_revisions_unattributed"] == 1
    assert [r.requested_by for r in await memory.facts.history(GUILD, BOB)] == [0]
    async with memory.sessions() as session:
        assert await remaining(session, GUILD, ALICE) == dict.fromkeys(
            [
                "chat_history",
                "user_facts",
                "fact_revisions",
                "daily_summaries",
                "historical_summaries",
                "rollups",
                "member_names",
            ],
            0,
        )
    # Summaries and rollups of others built from the same days are gone too (recomputed without alice).
    assert await count(memory, DailySummary, guild_id=GUILD) == 0
    # bob's rollups of the two weeks alice wrote in are gone (rebuilt without her); his others stay.
    assert await count(memory, Rollup, guild_id=GUILD, user_id=BOB) == 0
    # Caches: nothing about alice is served, and bob's rebuilt context no longer quotes her.
    assert await memory.recollection.context(GUILD, ALICE) is None
    assert await memory.names.resolve(GUILD, "alice") == []
    assert all(line.author_id != ALICE for line in memory.window.recent(GUILD, CHANNEL, budget_tokens=10_000))
    bob = await memory.recollection.context(GUILD, BOB)
    assert bob is not None and SECRET not in bob
    # Revisions bob asked for stay bob's; ones alice asked for about others no longer name her.
    counts_bob = await memory.admin.forget_member(GUILD, BOB)
    assert counts_bob["fact_revisions_unattributed"] == 0
    # Another guild keeps its own data.
    assert await count(memory, ChatMessage, guild_id=OTHER_GUILD) == 1


async def test_opt_out_stops_storage_and_can_delete(memory):
    counts = await memory.admin.opt_out(GUILD, ALICE, delete_stored=True)
    assert counts["chat_history"] == 6 and counts["rollups"] > 0
    assert not await memory.intake.message(message("after opting out", author=ALICE, name="alice"))
    await memory.flush()
    assert await count(memory, ChatMessage, guild_id=GUILD, user_id=ALICE) == 0
    assert await count(memory, UserOptOut, guild_id=GUILD, user_id=ALICE) == 1
    await memory.admin.opt_in(GUILD, ALICE)
    back = NOW + timedelta(minutes=1)  # said after opting in (what she said before stays forgotten)
    assert await memory.intake.message(message("back again", author=ALICE, name="alice", at=back))
    assert not await memory.intake.message(message("said earlier", author=ALICE, name="alice", at=NOW))


async def test_purge_channel_before_and_guild(memory):
    counts = await memory.admin.purge_channel(GUILD, CHANNEL + 1)
    assert counts["chat_history"] == 6 and await count(memory, ChatMessage, channel_id=CHANNEL + 1) == 0
    assert counts["rollups"] == 4  # the weeks of days 20 and 45, for both members
    counts = await memory.admin.purge_before(GUILD, NOW - timedelta(days=1))
    assert counts["chat_history"] == 5  # alice's messages of the five earlier days
    counts = await memory.admin.purge_guild(GUILD)
    assert counts["chat_history"] == 1 and counts["user_facts"] == 2
    for model in (ChatMessage, UserFacts, DailySummary, HistoricalSummary, Rollup):
        assert await count(memory, model, guild_id=GUILD) == 0
    assert await memory.recollection.context(GUILD, ALICE) is None
    assert await count(memory, ChatMessage, guild_id=OTHER_GUILD) == 1


async def test_retention_deletes_only_what_is_older(engine, settings):
    keep_all = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW))  # RETENTION_DAYS=0
    await keep_all.start()
    for back in range(5):
        await keep_all.intake.message(message(f"day {back}", at=NOW - timedelta(days=back, hours=1)))
    await keep_all.intake.message(message("other guild, old", guild=OTHER_GUILD, at=NOW - timedelta(days=30)))
    await keep_all.flush()
    assert await keep_all.admin.apply_retention() == {}
    await keep_all.close()
    memory = MemoryManager(
        engine,
        settings.model_copy(update={"retention_days": 2}),
        llm=model_stack(),
        clock=FakeClock(NOW),
    )
    await memory.start()
    deleted = await memory.admin.apply_retention()
    assert deleted["chat_history"] == 4  # days 2, 3, 4 here and the old one in the other guild
    assert await count(memory, ChatMessage) == 2
    await memory.close()


@pytest.mark.parametrize(
    "target",
    [{"user_id": ALICE}, {"channel_id": CHANNEL + 1}, {"before": NOW - timedelta(days=2)}, {}],
    ids=["member", "channel", "before", "guild"],
)
async def test_a_deletion_preview_counts_exactly_what_the_deletion_then_takes_and_changes_nothing(memory, target):
    """What `python -m bot purge` asks about: the deletion rehearsed and rolled back."""
    messages_before = await count(memory, ChatMessage, guild_id=GUILD)
    preview = await memory.admin.purge(GUILD, **target, preview=True)
    assert preview["chat_history"] > 0 and preview["daily_summaries"] > 0
    assert await count(memory, ChatMessage, guild_id=GUILD) == messages_before
    assert await memory.recollection.context(GUILD, ALICE)  # caches and locks are as they were
    if "user_id" in target:
        done = await memory.admin.forget_member(GUILD, ALICE)
    elif "channel_id" in target:
        done = await memory.admin.purge_channel(GUILD, target["channel_id"])
    elif "before" in target:
        done = await memory.admin.purge_before(GUILD, target["before"])
    else:
        done = await memory.admin.purge_guild(GUILD)
    assert +done == +preview


CALENDAR_ENDS = (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=UTC))


@pytest.fixture
async def plain(engine, settings):
    """Memory without a model: what is stored, not what is built from it."""
    memory = MemoryManager(engine, settings.model_copy(update={"retention_days": 2}), clock=FakeClock(NOW))
    await memory.start()
    yield memory
    await memory.close()


async def stored_as_older_versions_did(memory, *records) -> None:
    """Straight through the ingest writer, as versions that took any time did (no normalisation)."""
    writer = batch_writer_for(memory.engine)
    try:
        await writer.write(list(records))
    finally:
        await writer.close()


@pytest.mark.parametrize("target", ["member", "channel", "before", "guild", "channel rule"])
async def test_rows_stored_at_the_ends_of_the_calendar_by_older_versions_can_be_deleted(plain, target):
    at_the_ends = [message(f"{SECRET} in {at.year}", at=at) for at in CALENDAR_ENDS]
    await stored_as_older_versions_did(plain, *at_the_ends, message("bob's", author=BOB, name="bob", at=NOW))
    if target == "member":
        counts = await plain.admin.forget_member(GUILD, ALICE)
    elif target == "channel":
        counts = await plain.admin.purge_channel(GUILD, CHANNEL)
    elif target == "before":
        counts = await plain.admin.purge_before(GUILD, NOW)
    elif target == "guild":
        counts = await plain.admin.purge_guild(GUILD)
    else:  # its summaries go, its messages stay
        counts = await plain.admin.set_channel_mode(GUILD, CHANNEL, "exclude")
        assert await count(plain, ChatMessage, user_id=ALICE) == 2
        return
    assert counts["chat_history"] == {"member": 2, "channel": 3, "before": 1, "guild": 3}[target]


async def dead_letter_texts(memory) -> list[str]:
    async with memory.sessions() as session:
        return sorted(json.loads(p)["content"] for p in await session.scalars(select(DeadLetter.payload)))


async def test_dead_letters_are_dated_by_their_message_and_go_with_its_period(plain):
    """A record refused for its reply id (2^63) is dated when it was said: retention and purges of then take it."""
    refused = []
    for days, author in ((30, ALICE), (1.5, BOB), (0, ALICE)):
        said = message(f"refused from {days} days ago", author=author, at=NOW - timedelta(days=days, hours=1))
        refused.append(dataclasses.replace(said, reply_to_id=2**63))
        await plain.intake.message(refused[-1])
    # No guild's purge finds a record of no possible guild; retention does.
    nowhere = message("refused, of no guild", guild=2**63, at=NOW - timedelta(days=30))
    await plain.intake.message(nowhere)
    await plain.flush()
    assert len(await dead_letter_texts(plain)) == 2  # retention (2 days) keeps nothing older, not even refused
    # As a process that kept everything (RETENTION_DAYS=0) stored them.
    await stored_as_older_versions_did(plain, Refused(refused[0], "reply id"), Refused(nowhere, "guild id"))
    assert len(await dead_letter_texts(plain)) == 4
    assert (await plain.admin.apply_retention())["dead_letters"] == 2  # older than 2 days, no message stored then
    assert await dead_letter_texts(plain) == ["refused from 0 days ago", "refused from 1.5 days ago"]
    assert (await plain.admin.purge_before(GUILD, NOW - timedelta(days=1)))["dead_letters"] == 1
    assert (await plain.admin.forget_member(GUILD, ALICE))["dead_letters"] == 1
    assert await dead_letter_texts(plain) == []


async def test_a_refused_edit_goes_with_its_message(plain):
    said = message("stored words")
    await plain.intake.message(said)
    await plain.intake.edit(said.message_id, "an edit from the year 9999", CALENDAR_ENDS[1])
    await plain.flush()
    assert await dead_letter_texts(plain) == ["an edit from the year 9999"]
    assert (await plain.admin.purge_channel(GUILD, CHANNEL))["dead_letters"] == 1
    assert await dead_letter_texts(plain) == []


ZEPH = 2**60 + 1077


async def planner_samples(memory) -> str:
    """What the planner's statistics hold of values: SQLite's sampled index keys, PostgreSQL's pg_stats."""
    async with memory.engine.connect() as conn:
        if memory.engine.dialect.name == "sqlite":
            samples = await conn.scalars(text("SELECT sample FROM sqlite_stat4"))
            return b" ".join(bytes(s) for s in samples).decode("utf-8", "replace").casefold()
        values = await conn.scalars(
            text(
                "SELECT concat_ws(' ', most_common_vals::text, histogram_bounds::text, most_common_elems::text) "
                "FROM pg_stats WHERE schemaname = 'public'"
            )
        )
        return " ".join(values).casefold()


async def test_after_forget_me_the_planner_statistics_keep_no_sample_of_the_member(plain):
    """The statistics were taken while the member was stored (as autovacuum or the hourly optimize would)."""
    for i in range(4):
        for author, name in ((ZEPH, "Zephyrine"), (BOB, "bob"), (ALICE, "alice")):
            said = message(f"{name} on quokka lasagne, take {i}", author=author, name=name, at=NOW - timedelta(hours=i))
            await plain.intake.message(said)
        # Refused records of hers alone: the table is empty after the deletion (PostgreSQL keeps an empty table's
        # statistics through ANALYZE).
        refused = message(f"zephyrine's unstorable quokka {i}", author=ZEPH, name="Zephyrine", at=NOW)
        await plain.intake.message(dataclasses.replace(refused, reply_to_id=2**63))
    await plain.flush()
    async with plain.engine.connect() as conn:
        await conn.execute(text("ANALYZE"))
        await conn.commit()
    assert "zephyrine" in await planner_samples(plain)  # the test can fail

    await plain.admin.forget_member(GUILD, ZEPH)
    samples = await planner_samples(plain)
    assert "zephyrine" not in samples
    assert "bob" in samples  # others are sampled again
    await plain.admin.compact_pending()  # SQLite: the file, rewritten, keeps no page of the old samples either
    assert files_with(plain, ["zephyrine"]) == []
