"""Spans bot/memory/recall/ and bot/llm/embeddings.py: hybrid recall, both halves (words, meaning) contributing.

Gemini embeddings through the real google-genai client against a local stub.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from contextvars import ContextVar
from dataclasses import replace
from datetime import timedelta

import aiosqlite
import faiss
import numpy as np
import pytest
from sqlalchemy import event, func, select

from bot.lifecycle import landed
from bot.llm.embeddings import GeminiEmbedder
from bot.memory.manager import MemoryManager
from bot.memory.recall import embedding, guild_vectors
from bot.memory.recall import search as recall_search
from bot.memory.recall import vectors as vector_index
from bot.memory.summaries import context as member_context
from bot.memory.summaries import rollups
from bot.reply.deadline import Answer
from bot.reply.respond import Responder
from bot.reply.routing import Decision, Request, Route
from db.models import ChatMessage, MessageVector
from db.records import MessageVector as Vector
from db.search import turns as recall_rows
from fakes.gemini_stub import GeminiStub
from fakes.models import model_stack, stub_client
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message
from tests.memory.facts.test_store import AppendingModel

# The stub's "model": words of one concept share a dimension; every other word means nothing to it.
CONCEPTS = {"exam": 0, "exams": 0, "finals": 0, "test": 0, "flat": 1, "apartment": 1, "lease": 1, "cat": 2, "kitten": 2}


def concept_vector(text: str) -> list[float]:
    vector = [0.0] * 4
    for word in re.findall(r"\w+", text.lower()):
        if word in CONCEPTS:
            vector[CONCEPTS[word]] += 1.0
    # A model never gives two sentences of a meaning the very same vector (a search keeps one of each: the same
    # words said again): each such text's own small mark, in the dimension no concept uses, far below a concept.
    if any(vector):
        vector[3] += (1 + zlib.crc32(text.encode()) % 16) / 127
    return vector


@pytest.fixture
async def stub():
    server = await GeminiStub().start()
    server.embedder = concept_vector
    yield server
    await server.stop()


@pytest.fixture
async def build(engine, settings, stub):
    made = []

    async def make(*, hybrid: bool = True) -> MemoryManager:
        client = stub_client(stub.base_url)
        embedder = GeminiEmbedder(client, "gemini-embedding-001", dimensions=4, timeout_s=5) if hybrid else None
        memory = MemoryManager(engine, settings, facts_model=AppendingModel(), embedder=embedder)
        await memory.start()
        made.append((memory, client))
        return memory

    yield make
    for memory, client in made:
        await memory.close()
        await client.aio.aclose()


async def fill(memory: MemoryManager) -> None:
    for days, author, text in [
        (3, BOB, "my finals are on friday, wish me luck"),
        (2, ALICE, "pizza tonight?"),
        (1, ALICE, "the blue kettle is broken"),
        (1, BOB, "kettle"),
    ]:
        await memory.intake.message(message(text, author=author, at=T0 - timedelta(days=days)))
    await memory.flush()
    if memory.embedding is not None:
        await memory.embedding.idle()  # embedded in the background
        await memory.flush()
        assert await memory.recollection.vectors_ready(GUILD)  # the guild's index is built (replies never wait for it)


async def test_meaning_finds_what_words_miss(build, stub):
    text_only = await build(hybrid=False)
    await fill(text_only)
    assert await text_only.recollection.recall(GUILD, "when is the exam?", now=T0) == []  # no shared word
    hybrid = await build()
    await fill(hybrid)
    hits = await hybrid.recollection.recall(GUILD, "when is the exam?", now=T0)
    assert hits[0].text == "my finals are on friday, wish me luck"
    assert hits[0].cosine == pytest.approx(1.0, abs=0.02) and hits[0].coverage == 0  # meaning alone found it
    assert any(len(batch) == 1 and "exam" in batch[0] for batch in stub.embedded)  # the question, for the search


async def test_keyword_hits_still_count_and_rank_above_what_only_shares_a_word(build):
    memory = await build()
    await fill(memory)
    hits = await memory.recollection.recall(GUILD, "blue kettle", now=T0)
    # These words mean nothing to the embedding model: only the text half can find them, and it does.
    assert hits[0].text == "the blue kettle is broken" and hits[0].cosine == 0
    assert [h.text for h in hits].index("kettle") > 0  # half the words, coord²: below the complete match


async def test_vectors_are_stored_per_message_and_go_with_it(build, stub):
    memory = await build()
    await fill(memory)
    async with memory.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(MessageVector)) == 4
    requests = len(stub.embedded)
    other = await build()  # another process reads them from SQL: nothing is embedded again
    await other.recollection.vectors_ready(GUILD)
    await other.recollection.recall(GUILD, "exam", now=T0)
    assert len(stub.embedded) == requests + 1  # only the question
    await memory.admin.forget_member(GUILD, BOB)  # deleted means deleted: the vectors go with the messages
    async with memory.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(MessageVector)) == 2


async def test_a_failing_embedding_model_leaves_text_recall_working(build, stub):
    memory = await build()
    await fill(memory)

    def broken(text: str) -> list[float]:
        raise RuntimeError("embedding model down")

    stub.embedder = broken
    hits = await memory.recollection.recall(GUILD, "blue kettle", now=T0)
    assert hits and hits[0].text == "the blue kettle is broken"


async def test_a_question_never_waits_for_the_guilds_index_to_be_built(build, stub):
    memory = await build()
    await fill(memory)
    fresh = await build()  # a process that has not built this guild's index yet (seconds in a large guild)
    assert fresh.vectors is not None and not fresh.vectors.loaded(GUILD)
    hits = await fresh.recollection.recall(GUILD, "blue kettle", now=T0)
    assert hits[0].text == "the blue kettle is broken"  # the words answer at once
    assert await fresh.recollection.vectors_ready(GUILD) and fresh.vectors.loaded(
        GUILD
    )  # built meanwhile, for the next one
    hits = await fresh.recollection.recall(GUILD, "when is the exam?", now=T0)
    assert hits[0].text == "my finals are on friday, wish me luck"


def _held_back(vectors: vector_index.VectorIndex, monkeypatch) -> tuple[asyncio.Event, list[int], asyncio.Event]:
    """Builds of the guild's index that read SQL, then wait until `release` is set; the guilds they read, and an
    event set once one has."""
    release, loads, read = asyncio.Event(), [], asyncio.Event()
    load = vectors._load

    async def slow(guild_id: int) -> guild_vectors.GuildVectors:
        monkeypatch.setattr(vector_index, "IVF_FROM", 100_000)  # built exact: a 4-vector guild trains no IVF
        guild = await load(guild_id)
        loads.append(guild_id)
        read.set()
        await release.wait()
        return guild

    monkeypatch.setattr(vectors, "_load", slow)
    return release, loads, read


EXAM = np.array(concept_vector("exam"), dtype=np.float32)


async def _outgrown(
    build, monkeypatch
) -> tuple[vector_index.VectorIndex, guild_vectors.GuildVectors, tuple[asyncio.Event, list[int], asyncio.Event]]:
    """A guild's loaded index that its 4 vectors have outgrown, due to sync at its next search, and its builds held
    back (`_held_back`)."""
    memory = await build()
    await fill(memory)
    vectors = memory.vectors
    assert vectors is not None
    old = vectors._guilds[GUILD]
    held_back = _held_back(vectors, monkeypatch)
    monkeypatch.setattr(vector_index, "IVF_FROM", 2)
    old.synced -= vector_index.SYNC_SECONDS + 1
    return vectors, old, held_back


async def test_an_index_the_guild_outgrew_is_built_again_while_searches_keep_the_old_one(build, stub, monkeypatch):
    """A guild that outgrew its index gets an IVF trained on what is there now (seconds at 100,000 vectors): that
    build ran inside the next search, and the reply lost its recall to MEMORY_WAIT_SECONDS (bench.soak: 5 replies on
    each database)."""
    vectors, old, (release, loads, _) = await _outgrown(build, monkeypatch)
    for _ in range(2):  # the first search syncs and finds it grown; the next no longer found an index at all
        assert await asyncio.wait_for(vectors.search(GUILD, EXAM, 1), 5) != []
    assert vectors._guilds[GUILD] is old
    building = vectors._loading[GUILD]
    release.set()
    assert await building is vectors._guilds[GUILD] is not old and loads == [GUILD]
    assert await vectors.search(GUILD, EXAM, 1) != []


async def test_a_sync_that_met_the_new_index_leaves_it_be(build, stub, monkeypatch):
    """A sync of the old index still reading SQL when the new one took its place: the new one was read from SQL
    and holds what the sync read, and the old one's size must not start yet another build."""
    vectors, old, (release, loads, read) = await _outgrown(build, monkeypatch)
    await vectors.search(GUILD, EXAM, 1)  # the build begins
    await read.wait()
    gate, reading = asyncio.Event(), asyncio.Event()
    of_guild = vector_index.store.of_guild

    async def held_up(*args: object, **kwargs: object) -> list[object]:
        reading.set()
        await gate.wait()
        return await of_guild(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_index.store, "of_guild", held_up)
    old.synced -= vector_index.SYNC_SECONDS + 1
    searching = asyncio.ensure_future(vectors.search(GUILD, EXAM, 1))
    await reading.wait()
    building = vectors._loading[GUILD]
    release.set()
    new = await building
    monkeypatch.setattr(vector_index, "IVF_FROM", 2)  # the old index would count as outgrown again
    gate.set()
    assert await searching != []
    assert vectors._guilds[GUILD] is new and GUILD not in vectors._loading and loads == [GUILD]


async def test_an_index_built_while_messages_were_deleted_is_built_again(build, stub, monkeypatch):
    """A build that read the guild's vectors before a member was forgotten would put theirs back in the index."""
    memory = await build()
    await fill(memory)
    vectors = memory.vectors
    assert vectors is not None
    release, loads, read = _held_back(vectors, monkeypatch)
    vectors.drop(GUILD)
    building = vectors.warm(GUILD)
    await read.wait()  # the build has read the guild's vectors
    await memory.admin.forget_member(GUILD, BOB)
    release.set()
    await building
    assert loads == [GUILD, GUILD]
    assert BOB not in vectors._guilds[GUILD].authors and ALICE in vectors._guilds[GUILD].authors


async def test_a_busy_members_kept_selector_finds_their_messages_and_only_theirs(build, stub, monkeypatch):
    """A member with many vectors keeps their id set between searches; messages embedded since join it, and it
    is built again once the guild has grown enough."""
    monkeypatch.setattr(guild_vectors, "KEEP_SELECTOR_FROM", 2)
    memory = await build()
    await fill(memory)  # Bob: 2 vectors, Ana: 2
    fresh = await build()  # builds the index from SQL, keeping the busy members' selectors
    assert await fresh.recollection.vectors_ready(GUILD) and fresh.vectors is not None
    guild = fresh.vectors._guilds[GUILD]
    assert set(guild.selectors) == {ALICE, BOB}
    exam = np.array(concept_vector("exam"), dtype=np.float32)

    async def bobs() -> set[str]:
        found = await fresh.vectors.search(GUILD, exam, 10, author=BOB)
        async with fresh.sessions() as session:
            turns = await recall_rows.messages_by_id(session, GUILD, [m for m, _ in found], here=None)
        return {turn.text for turn in turns}

    assert await bobs() == {"my finals are on friday, wish me luck", "kettle"}
    for text, author in (("the exam moved to monday", BOB), ("my exam went fine", ALICE)):
        await fresh.intake.message(message(text, author=author, at=T0))
    await fresh.flush()
    assert fresh.embedding is not None
    await fresh.embedding.idle()  # embedded here, added to the loaded index: after the selector was kept
    assert await bobs() == {"my finals are on friday, wish me luck", "kettle", "the exam moved to monday"}
    monkeypatch.setattr(guild_vectors, "REBUILD_AFTER", 0)
    assert await bobs() == {"my finals are on friday, wish me luck", "kettle", "the exam moved to monday"}
    assert guild.selectors[BOB][1] == len(guild.ids)  # built again, over everything indexed


async def test_a_few_weeks_old_message_meets_only_the_last_seasons_competition(build, stub, monkeypatch):
    """A guild that has lived long holds many older messages nearer the question than a recent answer: the
    nearest are also looked for in the last season alone, so the answer stays a candidate (bench.soak, "weeks"),
    also one embedded after the season's selector was kept."""
    monkeypatch.setattr(recall_search, "VECTOR_POOL", 3)
    monkeypatch.setattr(recall_search, "MEMBER_POOL", 3)
    memory = await build()
    for n in range(6):  # a year ago: exactly the question's meaning ("finals" is the exam concept, not its word)
        await memory.intake.message(message(f"finals {n}", author=BOB, at=T0 - timedelta(days=300 + n)))
    answer = message("finals done, the cat slept through it", author=BOB, at=T0 - timedelta(days=20))
    await memory.intake.message(answer)
    await memory.flush()
    assert memory.embedding is not None
    await memory.embedding.idle()
    assert await memory.recollection.vectors_ready(GUILD)

    async def found(question: str, wanted: str) -> bool:
        messages, _ = await memory.recollection.search(GUILD, question, channel_id=CHANNEL, now=T0)
        return wanted in {h.text for h in messages}

    assert await found("how did the exam go?", "finals done, the cat slept through it")
    assert await found("how did bob's exam go?", "finals done, the cat slept through it")  # naming him too
    await memory.intake.message(message("finals again, the kitten helped", author=BOB, at=T0 - timedelta(days=1)))
    await memory.flush()
    await memory.embedding.idle()  # added to the loaded index after the season's selector was kept
    assert await found("how did the exam go?", "finals again, the kitten helped")
    monkeypatch.setattr(recall_search, "SEASON_DAYS", 400.0)  # the whole guild is one season: no pool of its own
    assert not await found("how did the exam go?", "finals done, the cat slept through it")


async def test_a_busy_members_answer_of_a_few_weeks_ago_meets_only_their_last_seasons_competition(
    build, stub, monkeypatch
):
    """A member who has said a great deal has many older lines nearer the question than the answer they gave a few
    weeks ago: once they have said MEMBER_SEASON_FROM messages, their own nearest are also looked for in their last
    season alone, so the answer stays a candidate; a member who has said less is not searched twice."""
    monkeypatch.setattr(recall_search, "VECTOR_POOL", 3)
    monkeypatch.setattr(recall_search, "MEMBER_POOL", 3)
    monkeypatch.setattr(recall_search, "MEMBER_SEASON_FROM", 8)
    memory = await build()
    for n in range(6):  # a year ago: exactly the question's meaning ("finals" is the exam concept, not its word)
        await memory.intake.message(message(f"finals {n}", author=BOB, name="bob", at=T0 - timedelta(days=300 + n)))
    for n in range(4):  # this season, someone else: the guild's season pool is theirs
        await memory.intake.message(message(f"finals for alice {n}", author=ALICE, at=T0 - timedelta(days=5 + n)))
    answer = message("finals done, the cat slept through it", author=BOB, name="bob", at=T0 - timedelta(days=20))
    await memory.intake.message(answer)
    await memory.flush()
    assert memory.embedding is not None
    await memory.embedding.idle()
    assert await memory.recollection.vectors_ready(GUILD)

    async def found() -> bool:
        messages, _ = await memory.recollection.search(GUILD, "how did bob's exam go?", channel_id=CHANNEL, now=T0)
        return answer.content in {h.text for h in messages}

    assert not await found()  # Bob has said 7: his whole history is his pool
    await memory.intake.message(message("kettle", author=BOB, name="bob", at=T0 - timedelta(days=200)))
    await memory.flush()
    await memory.embedding.idle()
    assert await found()  # 8: his season is searched on its own too


async def test_what_others_said_about_a_named_member_is_found_by_its_meaning(build, stub, monkeypatch):
    """A named member's mentions are many, and the words half ranks them by the name alone (the shortest first):
    the nearest among their newest mentions are looked for too, so a paraphrase about them stays a candidate."""
    for pool in ("POOL", "VECTOR_POOL", "MEMBER_POOL"):
        monkeypatch.setattr(recall_search, pool, 2)
    memory = await build()
    lines = [(ALICE, "bob said the finals went fine, the cat and the flat too")]  # the oldest: no recency helps it
    lines += [*((ALICE, "exam") for _ in range(3)), *((BOB, "exam") for _ in range(3))]  # nearer, about no one
    lines += [(ALICE, "bob lol"), (ALICE, "hi bob"), (ALICE, "bob!")]  # the name's shortest mentions
    for n, (author, text) in enumerate(lines):
        name = "bob" if author == BOB else "alice"  # the name the question's "bob" is read as
        await memory.intake.message(message(text, author=author, name=name, at=T0 - timedelta(hours=10 - n / 10)))
    await memory.flush()
    assert memory.embedding is not None
    await memory.embedding.idle()
    assert await memory.recollection.vectors_ready(GUILD)

    async def found() -> set[str]:
        messages, _ = await memory.recollection.search(GUILD, "did bob pass the exam?", channel_id=CHANNEL, now=T0)
        return {h.text for h in messages}

    assert "bob said the finals went fine, the cat and the flat too" in await found()
    monkeypatch.setattr(recall_search, "MENTIONS", 0)
    assert "bob said the finals went fine, the cat and the flat too" not in await found()

    # A search up to a moment takes the newest mentions before it, not the guild's newest (all after it).
    monkeypatch.setattr(recall_search, "MENTIONS", 4)  # the evidence and the three short mentions
    for text in ("bob later", "bob much later"):
        await memory.intake.message(message(text, author=ALICE, at=T0 - timedelta(hours=1)))
    await memory.flush()
    await memory.embedding.idle()
    until = T0 - timedelta(hours=2)
    hits = await memory.recollection.recall(GUILD, "did bob pass the exam?", now=T0, until=until, limit=50)
    assert "bob said the finals went fine, the cat and the flat too" in {h.text for h in hits}


async def test_a_private_channels_mentions_do_not_take_the_places_of_shared_ones(build, stub, monkeypatch):
    """The newest mentions among which the nearest are looked for are those the reader may see: a private channel's
    (or another reader's) newer mentions do not push a shared one out of the pool."""
    for pool in ("POOL", "VECTOR_POOL", "MEMBER_POOL"):
        monkeypatch.setattr(recall_search, pool, 2)
    monkeypatch.setattr(recall_search, "MENTIONS", 3)
    memory = await build()
    private = CHANNEL + 1
    await memory.intake.channel(GUILD, private, is_private=True)
    lines = [(ALICE, CHANNEL, "bob said the finals went fine, the cat and the flat too")]
    lines += [(author, CHANNEL, "exam") for author in (ALICE, BOB) for _ in range(3)]  # nearer, about no one
    lines += [(ALICE, CHANNEL, "bob lol"), (ALICE, CHANNEL, "hi bob")]  # the name's shortest mentions
    lines += [(ALICE, private, f"bob {word}") for word in ("later", "much later", "even later")]  # the newest
    for n, (author, channel, text) in enumerate(lines):
        name = "bob" if author == BOB else "alice"
        at = T0 - timedelta(hours=10 - n / 10)
        await memory.intake.message(message(text, author=author, name=name, channel=channel, at=at))
    await memory.flush()
    assert memory.embedding is not None
    await memory.embedding.idle()
    assert await memory.recollection.vectors_ready(GUILD)
    messages, _ = await memory.recollection.search(GUILD, "did bob pass the exam?", channel_id=CHANNEL, now=T0)
    assert "bob said the finals went fine, the cat and the flat too" in {h.text for h in messages}
    assert not {h.text for h in messages} & {"bob later", "bob much later", "bob even later"}


async def test_the_named_members_feedback_search_keeps_to_the_searchs_period(build, stub):
    """The named member's best hits search again (feedback); what that finds after a replayed moment or an
    `until` stays out, as every other pool's does."""
    memory = await build()
    for text, hours in (("exam", 10), ("the finals went fine, the cat too", 1)):  # the second after `until`
        await memory.intake.message(message(text, author=BOB, name="bob", at=T0 - timedelta(hours=hours)))
    await memory.flush()
    assert memory.embedding is not None
    await memory.embedding.idle()
    assert await memory.recollection.vectors_ready(GUILD)
    everything = await memory.recollection.recall(GUILD, "did bob pass the exam?", now=T0, limit=50)
    assert "the finals went fine, the cat too" in {h.text for h in everything}
    until = T0 - timedelta(hours=2)
    hits = await memory.recollection.recall(GUILD, "did bob pass the exam?", now=T0, until=until, limit=50)
    assert hits and all(h.at < until for h in hits)


async def test_background_embedding_waits_while_a_recall_search_is_under_way(build, stub, monkeypatch):
    """Both want the CPU and a member waits on the search: a batch starts only once no search is under way
    (or after YIELD_SECONDS, so a busy guild's embedding still goes on)."""
    monkeypatch.setattr(embedding, "YIELD_SECONDS", 3600.0)  # only the search's end lets the batch go, however slow
    memory = await build()
    await fill(memory)
    assert memory.embedding is not None
    before = memory.embedding.embedded
    async with memory.replies.under_way():
        await memory.intake.message(message("the exam moved to monday", author=BOB, at=T0))
        await asyncio.sleep(0.3)
        assert memory.embedding.embedded == before  # waiting for the search
    await memory.embedding.idle()
    assert memory.embedding.embedded == before + 1
    monkeypatch.setattr(embedding, "YIELD_SECONDS", 0.05)
    async with memory.replies.under_way():  # a search that never ends holds nothing up for long
        await memory.intake.message(message("my exam went fine", author=ALICE, at=T0))
        await memory.embedding.idle()
        assert memory.embedding.embedded == before + 2


async def test_background_embedding_waits_while_a_reply_is_under_way(build, stub, monkeypatch):
    """Not only the search: a whole reply (its context, the model's turns) goes before a batch of embedding."""
    monkeypatch.setattr(embedding, "YIELD_SECONDS", 3600.0)  # only the reply's end lets the batch go, however slow
    memory = await build()
    await fill(memory)
    assert memory.embedding is not None
    before = memory.embedding.embedded
    answering, release = asyncio.Event(), asyncio.Event()

    async def chatter(request: Request, context: str | None) -> str:
        answering.set()
        await release.wait()
        return "ok"

    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=chatter, policy="anyone"
    )
    reply = asyncio.create_task(responder.respond(Request(guild_id=GUILD, author_id=ALICE, text="nice weather")))
    await answering.wait()
    await memory.intake.message(message("the exam moved to monday", author=BOB, at=T0))
    await asyncio.sleep(0.3)
    assert memory.embedding.embedded == before  # the reply is still under way
    release.set()
    assert (await reply).text == "ok"
    await memory.embedding.idle()
    assert memory.embedding.embedded == before + 1


async def test_an_edit_while_embedding_waits_for_a_search_is_embedded_as_edited(build, stub, monkeypatch):
    """A message edited while its batch waits for a search: the vector stored is the edited text's."""
    monkeypatch.setattr(embedding, "YIELD_SECONDS", 3600.0)  # the batch waits until the search ends, however slow
    memory = await build()
    await fill(memory)
    assert memory.embedding is not None
    typo = message("the exam moved", author=BOB, at=T0)
    async with memory.replies.under_way():
        await memory.intake.message(typo)
        await memory.flush()
        await asyncio.sleep(0.2)  # the worker waits with the message noted
        await memory.intake.edit(typo.message_id, "my kitten is lost", T0)
        await memory.flush()
    await memory.embedding.idle()
    await memory.flush()
    async with memory.sessions() as session:
        stored = await session.scalar(select(MessageVector).where(MessageVector.message_id == typo.message_id))
    assert stored is not None
    vector = np.frombuffer(stored.vector, dtype=np.int8)
    assert int(np.argmax(vector)) == CONCEPTS["kitten"]  # not the exam it said before the edit


async def test_new_messages_are_embedded_without_looking_for_a_backlog_each_time(build, stub, monkeypatch):
    """The look for messages without a vector walks every message when there are none (15 ms at 100,000): it
    runs at start and when something may have been stored unnoticed, not after every message that arrives."""
    memory = await build()
    await fill(memory)
    assert memory.embedding is not None
    looks = 0
    unembedded = embedding.store.unembedded

    async def counted(*args, **kwargs):
        nonlocal looks
        looks += 1
        return await unembedded(*args, **kwargs)

    monkeypatch.setattr(embedding.store, "unembedded", counted)
    monkeypatch.setattr(embedding, "RESCAN_SECONDS", 3600.0)  # no periodic look however long this takes
    before = memory.embedding.embedded
    for i in range(12):
        await memory.intake.message(message(f"exam number {i}", author=BOB, at=T0))
        await memory.flush()
        for _ in range(3000):  # embedded as it arrives, one by one (30 s: a hang guard)
            if memory.embedding.embedded > before + i:
                break
            await asyncio.sleep(0.01)
    assert memory.embedding.embedded == before + 12
    assert looks == 0


async def test_messages_stored_unnoticed_are_found_by_the_next_look(build, stub, engine, monkeypatch):
    """What another process stored (no note here) is embedded within RESCAN_SECONDS, and at once after an
    import or edit drops the guild (`drop`), without anyone waiting on `idle`."""
    monkeypatch.setattr(embedding, "RESCAN_SECONDS", 0.3)
    memory = await build()
    await fill(memory)
    assert memory.embedding is not None

    async def store_elsewhere(text: str) -> int:
        other = MemoryManager(engine, memory.settings, facts_model=AppendingModel())  # no embedder: no note
        await other.start()
        try:
            row = message(text, author=BOB, at=T0)
            await other.intake.message(row)
            await other.flush()
        finally:
            await other.close()
        return row.message_id

    async def embedded(message_id: int) -> bool:
        for _ in range(1500):  # 30 s: a hang guard
            await memory.flush()
            async with memory.sessions() as session:
                if await session.scalar(select(MessageVector.id).where(MessageVector.message_id == message_id)):
                    return True
            await asyncio.sleep(0.02)
        return False

    assert await embedded(await store_elsewhere("the lease ends in june"))  # the periodic look
    monkeypatch.setattr(embedding, "RESCAN_SECONDS", 3600.0)
    unnoticed = await store_elsewhere("the kitten sleeps all day")
    await asyncio.sleep(0.5)
    async with memory.sessions() as session:
        assert await session.scalar(select(MessageVector.id).where(MessageVector.message_id == unnoticed)) is None
    memory.embedding.drop(GUILD)  # as an import's or a purge's change does
    assert await embedded(unnoticed)


async def test_an_edit_takes_its_old_vector_out_of_the_loaded_index(build):
    """Not only the SQL row (tests/memory/test_changes.py): the index in memory no longer finds the old meaning."""
    memory = await build()
    await fill(memory)
    assert memory.embedding is not None and memory.vectors is not None
    await memory.embedding.close()  # nothing embeds the new words meanwhile (their vector would replace the old)
    async with memory.sessions() as session:
        finals = await session.scalar(select(ChatMessage.message_id).where(ChatMessage.message_text.contains("finals")))
    exam = _unit([concept_vector("exam")])[0]
    assert dict(await memory.vectors.search(GUILD, exam, 10)).get(finals) == pytest.approx(1.0, abs=0.02)
    await memory.intake.edit(finals, "the kitten sleeps on the lease", T0)
    await memory.flush()
    assert memory.vectors.loaded(GUILD)  # the same index, not one rebuilt from SQL
    assert finals not in dict(await memory.vectors.search(GUILD, exam, 10))


def _unit(rows: list[list[float]]) -> np.ndarray:
    array = np.array(rows, dtype=np.float32)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


async def test_arriving_messages_are_indexed_without_a_removal_and_an_edit_replaces_its_vector():
    """Removing from an exact index scans it (3 ms at 100,000 messages): what arrives now is newer than anything
    indexed and needs none; a message embedded again (an edit) still loses its old vector."""
    index = vector_index.VectorIndex(None, "model", 4)  # type: ignore[arg-type]  # no SQL: the guild is given
    guild = index._guilds[GUILD] = guild_vectors.GuildVectors(vector_index._exact(4))
    removed: list[list[int]] = []
    remove = guild.index.remove_ids
    guild.index.remove_ids = lambda ids: (removed.append([int(i) for i in ids]), remove(ids))[1]
    index.add(GUILD, [10, 11], _unit([[1, 0, 0, 0], [0, 1, 0, 0]]), [ALICE, BOB], [1.0, 2.0])
    index.add(GUILD, [12], _unit([[0, 0, 1, 0]]), [ALICE], [3.0])
    assert removed == []
    index.add(GUILD, [11], _unit([[0, 0, 0, 1]]), [BOB], [2.0])  # message 11 edited
    assert removed == [[11]]
    found = await index.search(GUILD, _unit([[0, 1, 0, 0]])[0], 10)
    assert [i for i, _ in found].count(11) == 1 and dict(found)[11] == pytest.approx(0.0, abs=1e-3)
    assert dict(await index.search(GUILD, _unit([[0, 0, 0, 1]])[0], 10))[11] == pytest.approx(1.0, abs=1e-3)


async def test_a_season_or_a_window_is_a_range_of_ids_while_ids_grow_with_time_and_a_set_of_them_when_not():
    """Discord's ids grow with time, so the messages of a time are a range of ids (a comparison per vector, where a
    set cost a hash lookup); ids that do not (a console's: the time of its run) still find exactly that time."""
    index = vector_index.VectorIndex(None, "model", 4)  # type: ignore[arg-type]  # no SQL: the guild is given
    guild = index._guilds[GUILD] = guild_vectors.GuildVectors(vector_index._exact(4))
    hour = 3600.0
    query = _unit([[1, 1, 1, 1]])[0]

    def add(message_id: int, at: float) -> None:  # each message a vector of its own (a search keeps one of each)
        index.add(GUILD, [message_id], _unit([[1, 1, 1, message_id / 100]]), [ALICE], [at])

    async def found(**keep: object) -> set[int]:
        return {i for i, _ in await index.search(GUILD, query, 10, **keep)}  # type: ignore[arg-type]

    for message_id, at in ((10, 0.2 * hour), (20, 0.5 * hour), (30, 10 * hour), (40, 11 * hour)):
        add(message_id, at)
    assert await found(since=5 * hour) == {30, 40}
    assert isinstance(guild.recent[1], faiss.IDSelectorRange)  # type: ignore[index]
    add(50, 12 * hour)  # newer: within the range kept
    add(20, 0.5 * hour)  # an old message edited: noted again, outside it
    assert await found(since=5 * hour) == {30, 40, 50}
    assert isinstance(guild.recent[1], faiss.IDSelectorRange)  # type: ignore[index]
    add(60, 1.5 * hour)  # an id of now for a message of long ago
    assert await found(since=5 * hour) == {30, 40, 50}
    assert not isinstance(guild.recent[1], faiss.IDSelectorRange)  # type: ignore[index]
    assert await found(window=(9.5 * hour, 11.5 * hour)) == {30, 40}
    assert await found(window=(hour, 2 * hour)) == {60}
    assert await found(window=(0.0, 2 * hour)) == {10, 20, 60}  # 30 to 50 lie between: no range
    assert await found(window=(0.0, 2 * hour), author=ALICE) == {10, 20, 60}
    assert await found(window=(0.0, 2 * hour), author=BOB) == set()


def test_a_guilds_ids_authors_and_times_grow_in_place_and_views_taken_before_stay_whole():
    guild = guild_vectors.GuildVectors(vector_index._exact(4))
    expected: list[int] = []
    before = guild.ids
    for start in range(0, 5_000, 7):
        ids = np.arange(start, start + 7, dtype=np.int64)
        guild.note(ids, ids * 2, ids.astype(np.float64) / 2)
        expected += ids.tolist()
        if start == 2_800:
            before = guild.ids  # a search under way holds this view while more is noted
    assert guild.ids.tolist() == expected
    assert guild.authors.tolist() == [2 * i for i in expected]
    assert guild.times.tolist() == [i / 2 for i in expected]
    assert before.tolist() == expected[: len(before)] and len(before) == 2_807
    assert guild.newest == max(expected)


async def test_a_chat_lines_recall_takes_at_most_four_statements(engine, settings, stub, monkeypatch):
    """Words counted before (a chat's words recur): the full-text search, the rows of the nearest vectors, the
    summaries (beside them: every reply recalls alike) and the turns around the hits — no names (from memory), no
    facts read twice (the context's cache)."""
    client = stub_client(stub.base_url)
    embedder = GeminiEmbedder(client, "gemini-embedding-001", dimensions=4, timeout_s=5)
    memory = MemoryManager(engine, settings, llm=model_stack(), embedder=embedder)
    await memory.start()
    try:
        await fill(memory)
        sent: list[str] = []
        # Only the reply's statements (and those of what it starts) count: background work (ingest, embedding,
        # the change feed) runs meanwhile, and more of it on a busy machine (41-98 statements were seen).
        replying: ContextVar[bool] = ContextVar("replying", default=False)

        def count(conn: object, cursor: object, statement: str, *args: object) -> None:
            # A reply's first read is the change log (other processes' changes, not recall): not counted here.
            if replying.get() and "FROM memory_changes" not in statement:
                sent.append(statement)

        execute = aiosqlite.Connection._execute

        async def counting(self: aiosqlite.Connection, fn: object, *args: object, **kwargs: object) -> object:
            if getattr(fn, "__name__", "") in {"execute", "_execute_fetchall", "executemany"}:
                count(None, None, str(args[0]))  # SQLite's lean reads go past SQLAlchemy's events
            return await execute(self, fn, *args, **kwargs)

        async def router(request: Request) -> Decision:
            return Decision(Route.CHAT)

        async def model(request: Request, context: str | None) -> str:
            return context or ""

        async def reply(text: str) -> Answer:  # in a task of its own: the mark stays inside it
            replying.set(True)
            return await responder.respond(Request(GUILD, ALICE, text, channel_id=CHANNEL))

        responder = Responder(
            memory.facts, memory.recollection, memory.directory, router=router, chatter=model, policy="anyone"
        )
        await responder.respond(Request(GUILD, ALICE, "my blue kettle is broken", channel_id=CHANNEL))  # words counted
        async with asyncio.timeout(30):  # what that first context started behind it (a busy machine lags) lands
            await landed(rollups.BUILDING, member_context.BUILDING)
        await memory.recollection.context(GUILD, ALICE, patient=True)
        if engine.dialect.name == "sqlite":
            monkeypatch.setattr(aiosqlite.Connection, "_execute", counting)
        else:
            event.listen(engine.sync_engine, "before_cursor_execute", count)
        try:
            answer = await asyncio.create_task(reply("is the blue kettle broken?"))
        finally:
            monkeypatch.undo()
            if engine.dialect.name != "sqlite":
                event.remove(engine.sync_engine, "before_cursor_execute", count)
        assert "the blue kettle is broken" in answer.text  # recall found it and gave it to the model
        assert len(sent) <= 4, "\n".join(sent)
        assert sum("summar" in statement for statement in sent) <= 1
    finally:
        await memory.close()
        await client.aio.aclose()


async def test_a_vector_of_words_a_message_no_longer_says_is_not_stored(build):
    """An edit that lands while the old text is being embedded: the old text's vector arrives after the edit
    (and after the forgetting of the message's vector) and must not be stored; the new text's is."""
    memory = await build(hybrid=False)
    typo = message("the exam moved", author=BOB, at=T0)
    await memory.intake.message(typo)
    await memory.flush()
    await memory.intake.edit(typo.message_id, "my kitten is lost", T0)
    await memory.flush()

    async def stored() -> int:
        async with memory.sessions() as session:
            return int(
                await session.scalar(
                    select(func.count()).select_from(MessageVector).where(MessageVector.message_id == typo.message_id)
                )
                or 0
            )

    old = Vector(typo.message_id, GUILD, "model", bytes(4), 0.01, "the exam moved")
    await memory.queue.put(old)
    await memory.flush()
    assert await stored() == 0
    await memory.queue.put(replace(old, text="my kitten is lost"))
    await memory.flush()
    assert await stored() == 1


async def test_forget_that_takes_the_meaning_of_the_words_it_removes_from_a_messages_vector(build, stub):
    """A message "forget that…" rewrites keeps no vector of the words removed: the vector goes with them, and the
    remaining text is embedded again; a meaning search for what was forgotten no longer finds the message."""
    memory = await build()
    await fill(memory)
    said = message("my kitten is cute. I failed my exam today", author=BOB, name="Bob", at=T0)
    await memory.intake.message(said)  # after fill(), whose messages call Bob "alice": his name is Bob again
    assert memory.embedding is not None
    await memory.embedding.idle()
    await memory.flush()
    change = await memory.facts.forget(GUILD, BOB, "Bob failed his exam", requested_by=BOB)
    assert change.redacted >= 1
    await memory.embedding.idle()
    await memory.flush()
    async with memory.sessions() as session:
        text = await session.scalar(select(ChatMessage.message_text).where(ChatMessage.message_id == said.message_id))
        stored = await session.scalar(select(MessageVector).where(MessageVector.message_id == said.message_id))
    assert text is not None and "exam" not in text and "kitten" in text
    assert stored is not None  # the remaining words, embedded again
    vector = np.frombuffer(stored.vector, dtype=np.int8)
    assert vector[CONCEPTS["exam"]] == 0 and vector[CONCEPTS["kitten"]] > 0
    found = await memory.vectors.search(GUILD, np.array(concept_vector("exam"), dtype=np.float32), 10)  # type: ignore[union-attr]
    assert said.message_id not in {i for i, score in found if score > 0.1}


async def test_a_vector_stored_again_reaches_another_processs_index(build, monkeypatch):
    """A message embedded again (a new embedding model replaces the old vectors; a replay) must take a new place
    in the order other processes sync by: updated in place, it kept its old id, behind their cursor, and they
    never saw it (until a restart)."""
    monkeypatch.setattr(vector_index, "SYNC_SECONDS", 0.0)
    memory = await build()
    await fill(memory)
    other = await build()  # another process, its index loaded: its cursor is past every vector stored so far
    assert await other.recollection.vectors_ready(GUILD)
    async with memory.sessions() as session:
        pizza = await session.scalar(select(ChatMessage.message_id).where(ChatMessage.message_text == "pizza tonight?"))
        before = await session.scalar(select(func.max(MessageVector.id)))
    assert pizza is not None and memory.vectors is not None
    ((blob, scale),) = vector_index.quantize(np.array([concept_vector("kitten")], dtype=np.float32))
    await memory.queue.put(Vector(pizza, GUILD, memory.vectors.model, blob, scale))  # its vector, stored again
    await memory.flush()
    async with memory.sessions() as session:
        assert await session.scalar(select(MessageVector.id).where(MessageVector.message_id == pizza)) > before
    hits = await other.recollection.recall(GUILD, "where is my cat", now=T0)
    assert hits and hits[0].text == "pizza tonight?" and hits[0].cosine > 0.9


async def test_vectors_of_an_earlier_model_are_embedded_again_and_replaced(build):
    """A new embedding model (the float MiniLM's vectors when the int8 one came) must not mix with the old one's
    vectors: every message is embedded again in the background, each old vector replaced, none left behind."""
    memory = await build()
    await fill(memory)
    async with memory.sessions() as session:
        await session.execute(MessageVector.__table__.update().values(model="an-earlier-model"))
        await session.commit()
    restarted = await build()  # the next start, with the new model
    assert restarted.embedding is not None and restarted.vectors is not None
    restarted.embedding.start()  # the bot's background work (a CLI process would not)
    await restarted.embedding.idle()
    await restarted.flush()
    async with restarted.sessions() as session:
        models = (await session.execute(select(MessageVector.model, func.count()).group_by(MessageVector.model))).all()
    assert models == [(restarted.vectors.model, 4)]
    assert await restarted.recollection.vectors_ready(GUILD)  # its index is built from the new vectors alone
    hits = await restarted.recollection.recall(GUILD, "when is the test", now=T0)
    assert hits[0].text == "my finals are on friday, wish me luck" and hits[0].cosine > 0.9
