"""Reading a recap request: the channel (a mention, "here", else the server), the span it names, its topic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.memory.recap.span import named_span, read

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)  # a Friday
HERE = 2**60 + 100
EVENTS = 2**60 + 200


def day(d: int, hour: int = 0) -> datetime:
    return datetime(2026, 11, d, hour, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end", "label"),
    [
        ("catch me up since Friday", day(13), NOW, "since Friday"),  # said on a Friday: last week's
        ("since tue", day(17), NOW, "since Tuesday"),
        ("what happened here this week?", day(16), NOW, "this week"),
        ("what happened yesterday?", day(19), day(20), "yesterday"),
        ("since yesterday", day(19), NOW, "since yesterday"),
        ("recap of the last 3 hours", NOW - timedelta(hours=3), NOW, "in the last 3 hours"),
        ("since 3 days", NOW - timedelta(days=3), NOW, "in the last 3 days"),  # the slash command's form
        ("since 2pm", day(20, 14), NOW, "since 14:00"),
        ("since 19:30", day(19, 19) + timedelta(minutes=30), NOW, "since 19:30"),  # later than now: yesterday's
        ("what happened on Tuesday?", day(17), day(18), "on Tuesday"),
        ("since 2026-11-10", day(10), NOW, "since Tuesday 2026-11-10"),
        ("anything over the weekend?", day(14), day(16), "over the weekend"),
        ("fill me in on what happened today", day(20), NOW, "today"),
    ],
)
def test_a_named_span_overrides_the_default(text, start, end, label):
    reading = read(text, here=HERE, now=NOW, zone="UTC")
    assert reading.span == (start, end)
    assert reading.label == label


def test_spans_are_read_in_the_guilds_zone():
    # 18:00 UTC is 03:00 on Saturday in Tokyo: "today" began at 15:00 UTC.
    start, end, _ = named_span("what happened today?", NOW, "Asia/Tokyo") or (None, None, "")
    assert (start, end) == (datetime(2026, 11, 20, 15, tzinfo=UTC), NOW)


@pytest.mark.parametrize("text", ["what did I miss?", "catch me up", "since blorp", "what did I miss at the sat?"])
def test_no_named_span_leaves_the_default(text):
    assert read(text, here=HERE, now=NOW, zone="UTC").span is None


def test_a_channel_mention_wins_over_here_and_the_default_is_the_server():
    assert read(f"catch me up on <#{EVENTS}> since Friday", here=HERE, now=NOW, zone="UTC").channel_id == EVENTS
    assert read("what happened here?", here=HERE, now=NOW, zone="UTC").channel_id == HERE
    assert read("what happened in this channel today?", here=HERE, now=NOW, zone="UTC").channel_id == HERE
    assert read("what did I miss?", here=HERE, now=NOW, zone="UTC").channel_id is None


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("what did we decide about the tournament?", ("tournament",)),
        ("catch me up on the chess tournament since Friday", ("chess", "tournament")),
        (f"catch me up on <#{EVENTS}> since Friday", ()),
        ("fill me in on what happened today", ()),
        ("what did I miss?", ()),
    ],
)
def test_the_topic_is_what_it_asks_about_time_and_channel_aside(text, topic):
    assert read(text, here=HERE, now=NOW, zone="UTC").topic == topic
