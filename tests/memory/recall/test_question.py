"""Reading a question's time: explicit dates, months and years win; "recently" names no window, only a wish."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.memory.recall.question import asks_after, parts_of, read, time_window

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


async def nobody(words: list[str]) -> dict[str, list[int]]:
    return {}


async def ask(text: str):
    return await read(text, now=NOW, zone="UTC", resolve=nobody)


@pytest.mark.parametrize(
    "text", ["what did Mel paint recently?", "what has she been reading lately?", "where does Ana live these days?"]
)
async def test_recency_words_name_no_window_and_are_not_searched_for(text):
    question = await ask(text)
    assert question.window is None
    assert question.recent
    assert not {"recently", "lately"} & set(question.terms)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did Mel say recently in May 2022?", datetime(2022, 5, 1), datetime(2022, 6, 1)),
        ("anything about the lake lately, back in March?", datetime(2026, 3, 1), datetime(2026, 4, 1)),
        ("what did we plan in 2024, recently?", datetime(2024, 1, 1), datetime(2025, 1, 1)),
        ("what happened on 2025-02-14 recently?", datetime(2025, 2, 13), datetime(2025, 2, 16)),
        ("who came to the party on May 7th, 2022?", datetime(2022, 5, 6), datetime(2022, 5, 9)),
        ("what did bob cook on the 3rd of December?", datetime(2025, 12, 2), datetime(2025, 12, 5)),
    ],
)
async def test_an_explicit_date_month_or_year_wins_over_recency(text, start, end):
    question = await ask(text)
    assert question.window == (start.replace(tzinfo=UTC), end.replace(tzinfo=UTC))
    assert not question.recent


def test_relative_windows_stay_and_may_alone_is_the_verb():
    assert time_window("what did I say two weeks ago?", NOW) == (NOW - timedelta(days=18), NOW - timedelta(days=10))
    assert time_window("may I ask what you said recently?", NOW) is None
    feb = (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
    assert time_window("what happened on February 30?", NOW) == feb  # no such day: the month it names


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "what series did yuki binge last june, and is rui into climbing?",
            ["what series did yuki binge last june", "is rui into climbing?"],
        ),
        ("Where did Dana go? What book was Eli reading?", ["Where did Dana go", "What book was Eli reading?"]),
        ("what did Mel build; also where did she buy the wood?", ["what did Mel build", "where did she buy the wood?"]),
        # one question: the second part has nothing to search for, or "and" joins two people of one question
        ("when did rui get the keys to the new place, and where is it?", None),
        ("did bob and carol go to lisbon?", None),
        ("what did you and Ana decide?", None),
    ],
)
def test_a_message_asking_several_questions_is_read_in_parts(text, parts):
    assert parts_of(text) == (parts or [text])


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("what did Ana say about the trip?", True),  # a member (no resolver here: the words and the "?")
        ("any news on the volcano trip?", True),
        ("remind me which book club pick won", True),
        ("what did we decide last month", True),  # a time
        ("how are you today?", False),  # nothing to search for
        ("lol", False),
        ("i'm so bored", False),  # one word: a remark too short to earn recall
        ("the lease on the flat ends in june", True),  # a month
        ("nice weather for a picnic", None),  # a remark: what it finds decides
    ],
)
async def test_what_a_message_points_at_decides_whether_a_reply_recalls(text, asks):
    assert asks_after(await ask(text)) is asks
