"""The recall benchmark guild: deterministic, the same stories at every size, hard questions, valid exports."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bench import conversation_e2e as end_to_end
from bench.common import sqlite_engine
from bench.conversation_guild import NOW, content_words
from bench.conversation_stories import TYPES
from bench.conversations import generate, overlap_free, write_exports
from bot.exports import read_export
from bot.importer import import_file
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.settings import Settings
from fakes.models import model_stack


def test_same_seed_same_guild_and_the_stories_do_not_depend_on_size():
    small, again, bigger = generate(3_000, seed=3), generate(3_000, seed=3), generate(6_000, seed=3)
    assert [m.text for m in small.messages] == [m.text for m in again.messages]
    assert small.questions == bigger.questions
    assert small.planted == bigger.planted
    assert len(small.messages) == small.message_count == 3_000 + len(small.harder_ids)
    assert len(bigger.messages) == bigger.message_count == 6_000 + len(bigger.harder_ids)


def test_questions_are_hard_and_their_evidence_is_one_to_twelve_months_old():
    conv = generate(3_000, seed=7)
    assert 300 <= len(conv.questions) <= 400
    assert {q.type for q in conv.questions} == set(TYPES)
    assert all(30 <= sum(q.type == t for q in conv.questions) <= 80 for t in TYPES)
    assert sum(overlap_free(conv, q) for q in conv.questions) >= len(conv.questions) / 2
    assert all(overlap_free(conv, q) for q in conv.questions if q.type == "paraphrase")
    planted = {m.message_id: m for m in conv.planted}
    for q in conv.questions:
        assert q.asked_at == NOW
        assert all(timedelta(days=30) <= NOW - planted[i].timestamp <= timedelta(days=366) for i in q.evidence_ids)
        if q.type == "multi":
            assert len(q.evidence_ids) >= 2
    # Every story leaves newer look-alikes on its topic than its evidence.
    recent = [m for m in conv.planted if conv.planted_role[m.message_id] == "recent"]
    assert all(NOW - m.timestamp < timedelta(days=30) for m in recent)


def test_messages_stream_in_id_order_and_replies_point_back():
    conv = generate(3_000, seed=7)
    ids = [m.message_id for m in conv.iter_messages()]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    seen: set[int] = set()
    for m in conv.messages:
        assert m.timestamp.tzinfo is not None
        assert m.reply_to_id is None or m.reply_to_id in seen
        seen.add(m.message_id)


def test_content_words_lowercase_stem_and_drop_stopwords():
    assert content_words("Did Jon go camping?") == {"jon", "go", "camp"}
    assert not content_words("did jon go camping") & content_words("we sat around the campfire till 2am")


def test_exports_are_valid_discordchatexporter_json(tmp_path):
    conv = generate(2_000, seed=7)
    paths = write_exports(conv, tmp_path)
    assert len(paths) == len(conv.channels)
    total = 0
    for path in paths:
        export = read_export(path)
        assert export.guild.id == conv.guild_id
        total += len(export.messages)
    assert total == conv.message_count == 2_000 + len(conv.harder_ids)


@pytest.mark.slow
async def test_end_to_end_questions_reach_the_model_and_never_count_the_bots_own_conversation(tmp_path):
    """A quick run of the end-to-end benchmark (every 6th question of a 3,000-message guild, words only): questions
    sent as ordinary messages take the routes people's questions take, the model receives evidence, and what was
    addressed to the bot (every earlier question, asked once or twice) is never in the recalled part."""
    conv = generate(3_000, seed=7)
    settings = Settings(_env_file=None, database_url="sqlite+aiosqlite:///unused", embedding_model="none")  # type: ignore[call-arg]
    async with sqlite_engine(tmp_path) as engine:
        memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(conv.now))
        await memory.start(background=False)
        try:
            for path in write_exports(conv, tmp_path / "exports"):
                await import_file(memory, path, include_bots=False, progress=False)
            result = await end_to_end.measure(memory, conv, every=6)
        finally:
            await memory.close()
    routes = result.routes()
    assert {"chat", "recall"} <= set(routes)
    figures = result.result()
    assert {end_to_end.MULTI_PART, end_to_end.TWICE, "overall"} <= set(figures)
    assert figures["overall"][1] > 0.2  # evidence reaches the model (words only: far from the full figure)
    asked = {a.question.text for a in result.asked}
    for a in result.asked:
        recalled = a.memory.partition("Recalled conversation:")[2]
        assert not any(text in recalled for text in asked), a.question.text
