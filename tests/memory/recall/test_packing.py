"""What recall packs for the model (issue 30 part 3): a question asked in parts gets each part's best, repeats and
questions do not take an answer's place, a scene is dated once, summaries only fill what messages leave. Through
`Recollection.recollect` on both databases, words only (no encoder: deterministic)."""

from __future__ import annotations

from datetime import timedelta

from bot.memory.manager import MemoryManager
from bot.memory.recall.ranking import Hit, distinct, interleave
from db.summaries import save_day
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message

CAROL = 2**60 + 1003


async def said(memory: MemoryManager, lines: list[tuple[int, str, int]]) -> None:
    """(author, text, days ago) each, with the members' names known."""
    for n, (author, text, days) in enumerate(lines):
        name = {ALICE: "Ana", BOB: "Bob", CAROL: "Carol"}[author]
        at = T0 - timedelta(days=days, minutes=n)
        await memory.intake.message(message(text, author=author, name=name, at=at))
    await memory.flush()


async def test_each_part_of_a_question_asked_in_parts_gets_its_best_into_a_small_budget(memory, monkeypatch):
    """Twenty of Bob's exam messages that say "moving" too outrank Carol's one line about moving for the whole
    question; asked in parts, each part's best comes first, so both answers fit where only three lines do."""
    lines = [(BOB, f"chemistry exam revision, moving on to chapter {n}", 40 + n) for n in range(20)]
    lines += [(BOB, "my chemistry exam is on the 14th", 30), (CAROL, "we are moving to Lisbon in August", 200)]
    await said(memory, lines)
    question = "when is Bob's chemistry exam, and where is Carol moving?"
    recalled = await memory.recollection.recollect(GUILD, question, channel_id=CHANNEL, budget=60)
    assert "moving to Lisbon" in recalled.text
    assert "chemistry exam" in recalled.text
    monkeypatch.setattr("bot.memory.recollection.parts_of", lambda text: [text])
    whole = await memory.recollection.recollect(GUILD, question, channel_id=CHANNEL, budget=60)
    assert "moving to Lisbon" not in whole.text  # read as one question, Bob's fill the budget


async def test_repeats_and_questions_do_not_take_the_place_of_what_tells(memory):
    """People say "tattoo regret stories?" again and again; the line that tells is what the model gets."""
    lines = [(BOB, "tattoo regret stories?", 10 + n) for n in range(6)]
    lines += [(BOB, "my tattoo is a moth", 90)]
    await said(memory, lines)
    recalled = await memory.recollection.recollect(GUILD, "what tattoo did Bob get?", channel_id=CHANNEL, budget=60)
    assert recalled.hits[0].text == "my tattoo is a moth"
    assert sum(h.text == "tattoo regret stories?" for h in recalled.hits) == 1  # as a hit; neighbours may repeat


async def test_a_scene_is_dated_once_and_summaries_fill_only_what_messages_leave(memory):
    await memory.intake.message(message("the volcano hike is on saturday", author=BOB, name="Bob", at=T0))
    reply_at = T0 + timedelta(minutes=1)
    await memory.intake.message(message("I will bring the volcano map", author=ALICE, name="Ana", at=reply_at))
    await memory.flush()
    async with memory.sessions() as session, session.begin():
        await save_day(
            session, GUILD, (T0 - timedelta(days=9)).date(), {BOB: "Bob planned the volcano hike with Ana."},
            model="stub", version="1", at=T0,
        )  # fmt: skip
    roomy = await memory.recollection.recollect(
        GUILD, "the volcano hike?", channel_id=CHANNEL, now=T0 + timedelta(days=1)
    )
    day = f"[{T0:%Y-%m-%d}]"
    assert roomy.text.count(day) == 1 and "\nAna: I will bring the volcano map" in roomy.text
    assert "summary of Bob's day" in roomy.text  # room left: the summary adds the day it tells
    tight = await memory.recollection.recollect(
        GUILD, "the volcano hike?", channel_id=CHANNEL, now=T0 + timedelta(days=1), budget=30
    )
    assert "volcano hike is on saturday" in tight.text and "summary of" not in tight.text


def _hit(message_id: int, text: str) -> Hit:
    return Hit("message", GUILD, BOB, text, T0, 1.0, CHANNEL, message_id)


def test_parts_are_taken_in_turns_each_hit_once():
    first = [_hit(1, "a"), _hit(2, "b"), _hit(3, "c")]
    second = [_hit(2, "b"), _hit(4, "d")]
    messages, summaries = interleave([(first, []), (second, [])])
    assert [h.message_id for h in messages] == [1, 2, 4, 3] and summaries == []


def test_a_repeat_in_other_case_and_punctuation_is_a_repeat():
    hits = [_hit(1, "Love that for you!"), _hit(2, "love that for you"), _hit(3, "love that for them")]
    assert [h.message_id for h in distinct(hits)] == [1, 3]


def test_a_scene_too_long_for_what_is_left_is_cut_around_its_hit_not_skipped():
    """Packing used to skip a scene that did not fit whole, its hit with it, while smaller, worse ones after it
    fitted: a fifth of the evidence that missed the model on unseen conversations. The turns farthest from the hit
    go first until it fits."""
    from bot.memory.recall.snippets import Snippet, pack
    from db.search.types import Turn

    def turn(n: int, text: str, author: int = ALICE) -> Turn:
        return Turn(10 + n, CHANNEL, author, text, T0 + timedelta(minutes=n), None)

    chatter = [turn(n, f"small talk about the weather and the bus number {n} again today") for n in range(12)]
    answer = turn(12, "the vet said nothing serious, just a sprained paw", BOB)
    scene = Snippet(_hit_of(answer), [*chatter, answer, turn(13, "phew, good to hear")])
    worse = Snippet(_hit_of(turn(40, "paws and claws")), [turn(40, "paws and claws")])
    packed = pack([scene, worse], [], {ALICE: "Ana", BOB: "Bob"}, budget=60, zone="UTC")
    assert "just a sprained paw" in packed.text
    assert packed.snippets[0].hit.message_id == answer.message_id
    assert len(packed.snippets[0].turns) < len(scene.turns)


def _hit_of(turn) -> Hit:
    return Hit("message", GUILD, turn.user_id, turn.text, turn.at, 1.0, turn.channel_id, turn.message_id)
