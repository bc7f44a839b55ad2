"""The recall benchmark guild: deterministic, the same stories at every size, hard questions, valid exports."""

from __future__ import annotations

from datetime import timedelta

from bench.conversation_guild import NOW, content_words
from bench.conversation_stories import TYPES
from bench.conversations import generate, overlap_free, write_exports
from bot.exports import read_export


def test_same_seed_same_guild_and_the_stories_do_not_depend_on_size():
    small, again, bigger = generate(3_000, seed=3), generate(3_000, seed=3), generate(6_000, seed=3)
    assert [m.text for m in small.messages] == [m.text for m in again.messages]
    assert small.questions == bigger.questions
    assert small.planted == bigger.planted
    assert len(small.messages) == 3_000 and len(bigger.messages) == 6_000


def test_questions_are_hard_and_their_evidence_is_one_to_twelve_months_old():
    conv = generate(3_000, seed=7)
    assert 200 <= len(conv.questions) <= 300
    assert {q.type for q in conv.questions} == set(TYPES)
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
    assert total == 2_000
