"""Spans every store and read path: nothing of a deleted thing survives anywhere — tables, files, caches, replies.

The tables include the full-text index.

Each test builds the same guild on both databases: alice tells the bot a secret, the bot confirms it (a stored
reply built from her data), a recall answer quotes her message, summaries, histories, rollups, contexts and
vectors are built; then one way of deleting runs, and tests/residue.py searches everything for what must be
gone.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.llm.client import LLM
from bot.llm.prompts import load_prompts
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.reply.respond import Responder
from bot.reply.routing import Request
from db.records import IncomingMessage, Kind
from fakes.models import model_stack
from tests.conftest import ALL_MODELS
from tests.factories import ALICE, BOB, CHANNEL, GUILD, message
from tests.residue import caches_with, files_with, residue, tables_with
from tests.scope_probe import SameVector

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
BOT = 2**60 + 1
OTHER_CHANNEL = CHANNEL + 7
ROOT = Path(__file__).resolve().parents[2]


class World:
    """The guild, and the ids of what was said."""

    def __init__(self, memory: MemoryManager, responder: Responder) -> None:
        self.memory = memory
        self.responder = responder
        self.ids: dict[str, int] = {}

    async def say(
        self,
        key: str,
        text: str,
        *,
        author: int = ALICE,
        name: str = "alice",
        days: float = 0,
        channel: int = CHANNEL,
        kind: Kind = Kind.SPEECH,
    ) -> IncomingMessage:
        m = message(text, author=author, name=name, channel=channel, at=NOW - timedelta(days=days, hours=1))
        m = IncomingMessage(**{**{f: getattr(m, f) for f in m.__dataclass_fields__}, "kind": kind})
        await self.memory.intake.message(m)
        self.ids[key] = m.message_id
        return m

    async def ask(self, key: str, text: str, *, author: int = ALICE) -> None:
        """A message addressed to the bot, answered, and the answer stored as the bot's reply with its sources."""
        name = "alice" if author == ALICE else "bob"
        asked = await self.say(key, f"Elefant, {text}", author=author, name=name, kind=Kind.ADDRESSED)
        await self.memory.flush()
        answer = await self.responder.respond(
            Request(GUILD, author, text, channel_id=CHANNEL, message_id=asked.message_id, bot_user_id=BOT)
        )
        reply = message(answer.text, author=BOT, name="Elefant", at=asked.created_at + timedelta(seconds=5))
        await self.memory.intake.reply(reply, members=answer.members, messages=answer.quoted)
        self.ids[f"{key} reply"] = reply.message_id


async def make_world(engine, settings, llm: LLM) -> World:
    memory = MemoryManager(
        engine,
        settings.model_copy(update={"memory_wait_seconds": 60}),
        llm=llm,
        clock=FakeClock(NOW),
        embedder=SameVector(),
    )
    await memory.start()
    responder = Responder(
        memory.facts,
        memory.recollection,
        memory.directory,
        router=None,
        chatter=lambda request, context: "ok",
        policy="anyone",
    )
    w = World(memory, responder)
    memory.directory.note_name(GUILD, ALICE, "alice")
    memory.directory.note_name(GUILD, BOB, "bob")
    await w.say("old quince", "the quince jam recipe is my grandmother's", days=20)
    await w.say("old pomegranate", "my passport word is pomegranate", days=2)
    await w.say("bob old", "lovely weather today", author=BOB, name="bob", days=2, channel=OTHER_CHANNEL)
    await w.say("bob mentions", f"<@{ALICE}> see you at the match", author=BOB, name="bob", days=2)
    await w.ask("remember", "remember that my passport word is pomegranate")
    await w.say("tangerine", "my locker code is tangerine")
    await w.say("mandarin 1", "the mandarin shipment arrives monday")
    await w.say("mandarin 2", "mandarin orders are closed")
    await w.say("kumquat", "my alarm code is kumquat")
    await w.say("bob today", "anyone up for lunch?", author=BOB, name="bob", channel=OTHER_CHANNEL)
    await w.ask("recall", "when did I mention my passport word?", author=BOB)  # quotes alice's message
    await memory.flush()
    for member in (ALICE, BOB):  # summaries, histories, rollups, contexts, last-good contexts
        assert await memory.recollection.context(GUILD, member)
    assert memory.rollups is not None
    await memory.rollups.earlier(GUILD, ALICE, NOW.date(), wait=True)
    await memory.recollection.recall(GUILD, "passport word pomegranate", channel_id=CHANNEL)  # embeds the candidates
    return w


@pytest.fixture
async def world(engine, settings):
    w = await make_world(engine, settings, model_stack())
    yield w
    await w.memory.close()


async def test_the_world_holds_every_secret_before_anything_is_deleted(world):
    found = await residue(world.memory, ["pomegranate", "tangerine", "mandarin", "kumquat", "quince"], ALICE)
    for where in ("chat_history", "user_facts", "fact_revisions", "daily_summaries", "reply_sources", "cache"):
        assert any(line.startswith(where) for line in found), where  # the search can find each kind of copy
    assert "pomegranate" in (await world.memory.recollection.context(GUILD, ALICE) or "")
    if world.memory.engine.dialect.name == "sqlite":  # the raw files hold the words too, until deleted
        assert files_with(world.memory, ["pomegranate", "tangerine"])


async def test_forget_me_leaves_nothing_of_the_member(world):
    await world.memory.admin.forget_member(GUILD, ALICE)
    assert await residue(world.memory, ["pomegranate", "tangerine", "kumquat", "quince"], ALICE) == []
    assert await world.memory.recollection.context(GUILD, ALICE) is None  # and no lookup re-creates a row about them
    await world.memory.admin.export(GUILD, ALICE)
    await world.memory.recollection.recall(GUILD, "alice passport", channel_id=CHANNEL)
    assert await tables_with(world.memory, ["pomegranate"], ALICE) == []


async def test_opt_out_with_delete_leaves_only_the_opt_out(world):
    await world.memory.admin.opt_out(GUILD, ALICE, delete_stored=True)
    assert await residue(world.memory, ["pomegranate", "tangerine", "kumquat"], ALICE) == []


@pytest.mark.parametrize("what", ["channel", "before", "all"])
async def test_purges_leave_nothing_of_what_they_purged(world, what):
    memory = world.memory
    if what == "channel":
        await memory.admin.purge_channel(GUILD, CHANNEL)
        words, member = ["tangerine", "kumquat", "quince", "mandarin"], None  # her facts are not the channel's
    elif what == "before":
        await memory.admin.purge_before(GUILD, NOW - timedelta(days=10))
        words, member = ["quince"], None
    else:
        await memory.admin.purge_guild(GUILD)
        words, member = ["pomegranate", "tangerine", "kumquat", "quince", "weather", "lunch"], ALICE
    assert await residue(memory, words, member) == []


async def test_discord_delete_bulk_delete_and_edit_reach_everything_built_on_them(world):
    memory, ids = world.memory, world.ids
    await memory.intake.delete([ids["tangerine"]])
    await memory.intake.delete([ids["mandarin 1"], ids["mandarin 2"]])
    await memory.intake.edit(ids["kumquat"], "never mind", NOW)
    await memory.intake.delete([ids["old pomegranate"]])  # the recall answer that quoted it goes too
    assert await residue(memory, ["tangerine", "mandarin", "kumquat"]) == []
    assert ids["recall reply"] not in {h.message_id for h in await memory.recollection.recall(GUILD, "passport word")}


@pytest.mark.parametrize("llm", ALL_MODELS, indirect=True)
async def test_forget_that_removes_the_statement_everywhere_and_keeps_the_rest(engine, settings, llm):
    world = await make_world(engine, settings, llm)  # offline, and the real Gemini and openai clients at stubs
    memory = world.memory
    try:
        assert "pomegranate" in (await memory.facts.get(GUILD, ALICE) or "")
        await world.ask("forget", "forget that my passport word is pomegranate")
        assert await residue(memory, ["pomegranate"]) == []
        kept = await memory.recollection.recall(GUILD, "alarm code kumquat", channel_id=CHANNEL)
        assert any("kumquat" in hit.text for hit in kept)  # what else she said stays
    finally:
        await memory.close()


class HeldModel(LLM):
    """The model answers only when let: a build can be caught half-way."""

    def __init__(self) -> None:
        super().__init__(None, prompts=load_prompts())
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, operation, variables, **kwargs):  # type: ignore[override]
        if operation == "daily_summary":
            self.started.set()
            await self.release.wait()
        return await super().run(operation, variables, **kwargs)


async def test_a_build_racing_forget_me_cannot_write_the_member_back(engine, settings):
    held = HeldModel()
    memory = MemoryManager(
        engine, settings.model_copy(update={"memory_wait_seconds": 0.05}), llm=held, clock=FakeClock(NOW)
    )
    await memory.start()
    try:
        for back in range(1, 4):
            await memory.intake.message(message(f"pomegranate day {back}", at=NOW - timedelta(days=back)))
        await memory.flush()
        await memory.recollection.context(GUILD, ALICE)  # the guard answers; the build goes on, held by the model
        await asyncio.wait_for(held.started.wait(), 5)
        await memory.admin.forget_member(GUILD, ALICE)
        held.release.set()
        await asyncio.sleep(0.2)  # the build finishes with the deleted words in hand
        await memory.close()
        # No row about her and none of her words anywhere; a lookup made after the deletion (the stale build's
        # own later steps) may remember in memory that she has nothing, as any later lookup would.
        assert await tables_with(memory, ["pomegranate"], ALICE) == []
        assert files_with(memory, ["pomegranate"]) == [] and caches_with(memory, ["pomegranate"], None) == []
    finally:
        held.release.set()
        await memory.close()


async def test_forget_me_from_another_process_empties_this_ones_caches(world, db_url, tmp_path):
    memory = world.memory
    assert "pomegranate" in (await memory.recollection.context(GUILD, ALICE) or "")
    env = {**os.environ, "DATABASE_URL": db_url, "PYTHONPATH": str(ROOT)}
    env.pop("GEMINI_API_KEY", None)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "bot", "purge", "--guild", str(GUILD), "--user", str(ALICE), "--yes"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for _ in range(20):  # within a second (the change feed polls twice a second; NOTIFY is faster on PostgreSQL)
        if not await residue(memory, ["pomegranate"], ALICE):
            break
        await asyncio.sleep(0.1)
    assert await residue(memory, ["pomegranate", "tangerine"], ALICE) == []
    assert await memory.recollection.context(GUILD, ALICE) is None


async def test_a_reply_built_from_an_opted_out_members_words_is_not_stored(world):
    memory = world.memory
    await memory.admin.opt_out(GUILD, BOB, delete_stored=False)
    await world.ask("bob remembers", "remember that my bike lock is 7301 persimmon", author=BOB)
    assert "persimmon" in (await memory.facts.get(GUILD, BOB) or "")  # he asked for that explicitly …
    found = await tables_with(memory, ["persimmon"], None)
    assert found and all(line.startswith(("user_facts", "fact_revisions", "chat_fts", "summary_fts")) for line in found)
    # … but neither his request nor the bot's reply quoting it is stored as a message.
    assert not any(line.startswith(("chat_history", "chat_fts")) for line in found)


async def test_deletions_are_followed_by_a_rewrite_of_the_sqlite_file(sqlite_template, tmp_path):
    # secure_delete zeroes the cell a DELETE removes, not the stale copies a page rebalance can leave behind
    # when rows grow (edits): bench.scrub finds a forgotten member's edited words in a 50,000-message file
    # without the rewrite, in none with it. Here: the deletion frees pages, and the rewrite leaves none.
    import shutil

    from bot.settings import Settings
    from db.engine import create_engine

    path = tmp_path / "guild.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite+aiosqlite:///{path}"
    engine = create_engine(url)
    memory = MemoryManager(engine, Settings(_env_file=None, database_url=url, gemini_api_key=None, discord_token=None))  # type: ignore[call-arg]
    await memory.start()
    try:
        # Enough that the pages freed outnumber those the statistics taken again after the deletion reuse.
        for i in range(1000):
            author, name = (ALICE, "alice") if i % 2 else (BOB, "bob")
            await memory.intake.message(message(f"persimmon {i} " + "words " * 80, author=author, name=name))
        await memory.flush()
        await memory.admin.forget_member(GUILD, ALICE)
        await memory.flush()
        async with engine.connect() as connection:
            freed = (await connection.exec_driver_sql("PRAGMA freelist_count")).scalar()
        assert freed, "the deletion freed pages whose old bytes only a rewrite is sure to remove"
        assert await residue(memory, [], ALICE) == []
        async with engine.connect() as connection:
            assert (await connection.exec_driver_sql("PRAGMA freelist_count")).scalar() == 0  # rewritten
    finally:
        await memory.close()
        await engine.dispose()
