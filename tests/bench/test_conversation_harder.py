"""The harder stories of issue 38: planted on top of the first ones, which stay what they were, and as hard as their
types say (evidence in several scenes weeks apart, an answer by the other member sharing no word with the question,
a fact said by the other one of the pair the question names)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Iterable
from datetime import timedelta

from bench.conversation_guild import Message, content_words, snowflake
from bench.conversation_harder import plant_harder
from bench.conversation_planting import plant
from bench.conversation_stories import BASE_TYPES, HARDER_KINDS, HARDER_TYPES, KINDS
from bench.conversations import Conversation, generate

# Recorded at 0ecb859..edf6882 (before the harder stories), seed 7, small profile: the first stories' 256 questions,
# their planted messages and the filler between them.
FIRST_QUESTIONS = "e2a16687ba53538eb4d5be29cef3af0eac733e4efcf6efe082d6760219f02bfd"
FIRST_PLANTED = "5ec7cfb7d5e31b2f34affebdb4c973b05efc3cf5876d617a58bacdfc4d7d6301"
FILLER = "e533ab9cdf6721406bba3f65c1e99bfc5911f36e03add2dfcd69f4d7bfe66d57"


def _digest(rows: Iterable[list]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


def _row(m: Message) -> list:
    return [m.message_id, m.channel_id, m.author_id, m.text, m.timestamp.isoformat(), m.reply_to_id]


def test_the_first_stories_their_questions_and_the_filler_between_them_are_what_they_were():
    conv = generate("small")
    first = conv.questions[:256]
    assert {q.type for q in first} == set(BASE_TYPES)
    assert {q.type for q in conv.questions[256:]} == set(HARDER_TYPES)
    questions = [
        [q.text, q.asker_id, q.asked_at.isoformat(), q.type, list(q.evidence_ids), q.answer, q.story] for q in first
    ]
    assert _digest(questions) == FIRST_QUESTIONS
    assert _digest(_row(m) for m in conv.planted if m.message_id not in conv.harder_ids) == FIRST_PLANTED
    planted = {m.message_id for m in conv.planted}
    assert _digest(_row(m) for m in conv.iter_messages() if m.message_id not in planted) == FILLER
    assert conv.message_count == 20_000 + len(conv.harder_ids)  # the harder stories' messages come on top


def test_the_harder_stories_take_ids_and_milliseconds_of_their_own():
    conv = generate(3_000, seed=5)
    assert conv.harder_ids and conv.harder_ids < {m.message_id for m in conv.planted}
    assert all((i >> 17) & 31 == 2 for i in conv.harder_ids)  # their own snowflake worker
    ms = [int(m.timestamp.timestamp() * 1000) for m in conv.planted]
    assert len(set(ms)) == len(ms)
    assert len({k.key for k in KINDS + HARDER_KINDS}) == len(KINDS) + len(HARDER_KINDS)  # story ids never collide
    stories = [q.story for q in conv.questions]
    assert len(set(stories)) == len(stories)


def test_a_harder_message_in_a_filler_messages_millisecond_moves_no_filler():
    conv = generate(2_000, seed=7)
    planted = {m.message_id for m in conv.planted}
    filler = [m for m in conv.iter_messages() if m.message_id not in planted]
    same = filler[len(filler) // 2]
    extra = Message(snowflake(same.timestamp, worker=2), same.channel_id, same.author_id, "same ms", same.timestamp)
    crowded = dataclasses.replace(
        conv,
        planted=sorted([*conv.planted, extra], key=lambda m: m.message_id),
        harder_ids=conv.harder_ids | {extra.message_id},
        message_count=conv.message_count + 1,
    )
    assert [m for m in crowded.iter_messages() if m.message_id not in planted | {extra.message_id}] == filler


def test_the_harder_stories_step_out_of_the_first_stories_milliseconds():
    _, _, _, members, channels = plant(7)
    alone, _, _ = plant_harder(7, members, channels, [])
    taken = alone[10]
    beside, _, _ = plant_harder(7, members, channels, [taken])
    assert beside[10].text == taken.text and beside[10].timestamp == taken.timestamp + timedelta(milliseconds=1)


def _context(conv: Conversation):
    names = {m.id: m.name for m in conv.members}
    planted = {m.message_id: m for m in conv.planted}
    return names, planted


def test_spread_questions_need_two_to_four_scenes_of_the_subject_days_to_weeks_apart():
    conv = generate(3_000, seed=7)
    names, planted = _context(conv)
    spread = [q for q in conv.questions if q.type == "spread"]
    assert 32 <= len(spread) <= 48
    channels = set()
    for q in spread:
        evidence = sorted((planted[i] for i in q.evidence_ids), key=lambda m: m.timestamp)
        assert 2 <= len(evidence) <= 4
        assert {names[m.author_id] for m in evidence} == {q.story.split("/")[1]}
        gaps = [b.timestamp - a.timestamp for a, b in itertools.pairwise(evidence)]
        assert all(timedelta(days=2) <= gap <= timedelta(days=31) for gap in gaps), q.story
        assert not content_words(q.text) & set().union(*(content_words(m.text) for m in evidence))
        channels.add(len({m.channel_id for m in evidence}))
    assert max(channels) > 1  # some stories move between channels
    around = [m for m in conv.planted if conv.planted_role[m.message_id] == "around"]
    assert len(around) >= sum(len(q.evidence_ids) for q in spread)  # the topic's chatter near every scene


def test_answered_by_other_questions_are_answered_in_the_subjects_next_turn_sharing_no_word():
    conv = generate(3_000, seed=7)
    names, planted = _context(conv)
    asked = [q for q in conv.questions if q.type == "answered_by_other"]
    assert 32 <= len(asked) <= 48
    between = 0
    for q in asked:
        subject = q.story.split("/")[1]
        answer = planted[max(q.evidence_ids)]
        assert names[answer.author_id] == subject
        scene = [m for m in conv.planted if m.channel_id == answer.channel_id and m.timestamp <= answer.timestamp]
        before = [m for m in scene if answer.timestamp - m.timestamp < timedelta(minutes=12)][:-1]
        assert names[before[0].author_id] not in (subject, names[q.asker_id])  # another member asked it
        between += len(before) > 1
        words = set().union(*(content_words(planted[i].text) for i in q.evidence_ids))
        assert not content_words(q.text) & words
        assert names[q.asker_id] != subject
    assert 0 < between < len(asked)  # sometimes someone talks in between


def test_wrong_speaker_questions_name_one_of_a_pair_and_the_other_one_said_it():
    conv = generate(3_000, seed=7)
    names, planted = _context(conv)
    asked = [q for q in conv.questions if q.type == "wrong_speaker"]
    assert 32 <= len(asked) <= 48
    for q in asked:
        subject = q.story.split("/")[1]
        assert subject.lower() in q.text.lower()
        (fact,) = (planted[i] for i in q.evidence_ids)
        speaker = names[fact.author_id]
        assert speaker != subject and speaker.lower() not in q.text.lower()
        assert subject.lower() not in fact.text.lower()
        assert names[q.asker_id] not in (subject, speaker)
        # the named member spoke just before, in the same exchange, and on the topic at other times too
        exchange = [m for m in conv.planted if m.channel_id == fact.channel_id]
        just_before = [m for m in exchange if timedelta(0) < fact.timestamp - m.timestamp < timedelta(minutes=12)]
        assert any(names[m.author_id] == subject for m in just_before)
        own = [
            m
            for m in conv.planted
            if conv.planted_role[m.message_id] == "lookalike"
            and names[m.author_id] == subject
            and m.channel_id == fact.channel_id
        ]
        assert own
