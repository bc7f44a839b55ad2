"""Facts on both databases: revisions, revert, concurrency, guild isolation, forget-not-found, the cap."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select, text

from bot.memory.facts.store import FactsStore, RevisionNotFoundError, drop_oldest_sentences
from db.engine import create_session_factory
from db.models import FactRevision
from tests.factories import ALICE, BOB, GUILD, OTHER_GUILD


class AppendingModel:
    """Merges by appending a sentence, forgets by exact sentence match, condenses by keeping the newest half."""

    def __init__(self) -> None:
        self.condense_calls = 0

    async def merge(self, *, guild_id, subject, existing, fact, max_chars):
        await asyncio.sleep(0)  # let concurrent callers interleave, as a real model call would
        sentence = fact.rstrip(".") + "."
        return f"{existing} {sentence}".strip()

    async def remove(self, *, guild_id, subject, existing, fact):
        target = fact.rstrip(".") + "."
        sentences = existing.split(". ")
        sentences = [s if s.endswith(".") else s + "." for s in sentences]
        kept = [s for s in sentences if s != target]
        return len(kept) != len(sentences), " ".join(kept)

    async def condense(self, *, guild_id, subject, existing, max_chars):
        self.condense_calls += 1
        return existing[len(existing) // 2 :]


@pytest.fixture
def store(engine):
    return FactsStore(create_session_factory(engine), AppendingModel(), max_chars=300)


async def test_remember_writes_one_revision_per_change(store, engine):
    first = await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    second = await store.remember(GUILD, BOB, "Bob likes tea", requested_by=BOB, subject="Bob")
    assert first.after == "Bob is Sergey." and second.after == "Bob is Sergey. Bob likes tea."
    assert await store.facts(GUILD, BOB) == "Bob is Sergey. Bob likes tea."
    history = await store.history(GUILD, BOB)
    assert [(r.op, r.old_blob, r.new_blob, r.requested_by) for r in history] == [
        ("remember", "Bob is Sergey.", "Bob is Sergey. Bob likes tea.", BOB),
        ("remember", "", "Bob is Sergey.", ALICE),
    ]
    assert history[0].at.tzinfo is not None


async def test_revert_restores_the_blob_before_a_revision_as_a_new_revision(store):
    first = await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    await store.remember(GUILD, BOB, "Bob likes tea", requested_by=ALICE, subject="Bob")
    await store.remember(GUILD, BOB, "Bob hates tea", requested_by=ALICE, subject="Bob")
    second_id = (await store.history(GUILD, BOB))[1].id
    change = await store.revert(GUILD, BOB, second_id, requested_by=ALICE)
    assert change.after == "Bob is Sergey." == await store.facts(GUILD, BOB)
    history = await store.history(GUILD, BOB)
    assert len(history) == 4 and history[0].op == f"revert:{second_id}"
    await store.revert(GUILD, BOB, history[0].id, requested_by=ALICE)  # undo the undo
    assert await store.facts(GUILD, BOB) == "Bob is Sergey. Bob likes tea. Bob hates tea."
    assert first.revision_id is not None


async def test_revert_of_another_members_revision_is_refused(store):
    change = await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    with pytest.raises(RevisionNotFoundError):
        await store.revert(GUILD, ALICE, change.revision_id, requested_by=ALICE)
    with pytest.raises(RevisionNotFoundError):
        await store.revert(OTHER_GUILD, BOB, change.revision_id, requested_by=ALICE)


async def test_twenty_concurrent_remembers_keep_all_twenty(engine):
    store = FactsStore(create_session_factory(engine), AppendingModel(), max_chars=5000)
    await asyncio.gather(
        *(store.remember(GUILD, BOB, f"Bob fact number {i}", requested_by=ALICE, subject="Bob") for i in range(20))
    )
    blob = await store.facts(GUILD, BOB)
    assert blob is not None and all(f"Bob fact number {i}." in blob for i in range(20))
    async with create_session_factory(engine)() as session:
        assert await session.scalar(select(func.count()).select_from(FactRevision)) == 20


async def test_two_stores_sharing_a_database_lose_no_update(engine):
    # Two stores stand for two bot processes: their locks are separate, the compare-and-swap is shared.
    sessions = create_session_factory(engine)
    a, b = (FactsStore(sessions, AppendingModel(), max_chars=5000) for _ in range(2))
    await asyncio.gather(
        *((a if i % 2 else b).remember(GUILD, BOB, f"fact {i}", requested_by=ALICE, subject="Bob") for i in range(10))
    )
    blob = await a.facts(GUILD, BOB)
    assert blob is not None and all(f"fact {i}." in blob for i in range(10))


async def test_facts_never_cross_guilds(store):
    await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    assert await store.facts(OTHER_GUILD, BOB) is None
    assert await store.history(OTHER_GUILD, BOB) == []


async def test_forget_absent_fact_reports_not_found_and_changes_nothing(store):
    await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    before = await store.facts(GUILD, BOB)
    change = await store.forget(GUILD, BOB, "Bob owns a boat", requested_by=ALICE, subject="Bob")
    assert not change.found and not change.changed
    assert await store.facts(GUILD, BOB) == before
    assert len(await store.history(GUILD, BOB)) == 1


async def test_forget_present_fact_removes_it(store):
    await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    await store.remember(GUILD, BOB, "Bob likes tea", requested_by=ALICE, subject="Bob")
    change = await store.forget(GUILD, BOB, "Bob likes tea", requested_by=ALICE, subject="Bob")
    assert change.found and change.changed and await store.facts(GUILD, BOB) == "Bob is Sergey."
    assert (await store.history(GUILD, BOB))[0].op == "forget"


async def test_forget_with_nothing_stored_is_not_found(store):
    change = await store.forget(GUILD, BOB, "anything", requested_by=ALICE, subject="Bob")
    assert not change.found and await store.facts(GUILD, BOB) is None


async def test_the_cap_holds_after_200_remembers(engine):
    model = AppendingModel()
    store = FactsStore(create_session_factory(engine), model, max_chars=300)
    for i in range(200):
        await store.remember(GUILD, BOB, f"Bob visited city number {i}", requested_by=ALICE, subject="Bob")
        assert len(await store.facts(GUILD, BOB) or "") <= 300
    assert model.condense_calls > 0
    assert "city number 199." in (await store.facts(GUILD, BOB) or "")


def test_drop_oldest_sentences_keeps_the_newest():
    assert drop_oldest_sentences("One. Two. Three.", 11) == "Two. Three."
    assert drop_oldest_sentences("A very long single sentence", 6) == "ntence"


async def test_a_cached_read_that_a_change_or_purge_overtook_is_not_kept(store, engine, monkeypatch):
    """The read cache of facts (contexts, recall answers) must not keep what a read saw before a change or a
    deletion that landed while it was under way: the next read would serve deleted or old facts for 30 s."""
    read = store.facts

    async def forget():
        await store.forget(GUILD, ALICE, "Alice likes tea.", requested_by=ALICE, subject="Alice")

    async def purge():  # forget_member: the rows go, then the caches are told
        async with engine.begin() as connection:
            await connection.execute(text("DELETE FROM user_facts"))
        store.drop_cached(GUILD, ALICE)

    for change in (forget, purge):
        await store.remember(GUILD, ALICE, "Alice likes tea.", requested_by=ALICE, subject="Alice")
        store.drop_cached(GUILD)

        async def overtaken(guild_id, user_id, change=change):
            seen = await read(guild_id, user_id)
            monkeypatch.setattr(store, "facts", read)
            await change()  # lands while this read is under way
            return seen

        monkeypatch.setattr(store, "facts", overtaken)
        assert await store.cached_facts(GUILD, ALICE) == "Alice likes tea."  # this read began before
        assert not await store.cached_facts(GUILD, ALICE)  # the next one does not get it from the cache
