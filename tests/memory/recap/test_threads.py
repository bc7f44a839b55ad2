"""Threads of conversation in a span: interleaved conversations apart, replies and reactions with theirs, the
central messages of each, what was decided and what was left open."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

from bot.memory.recap import threads
from db.search.types import Turn

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
GENERAL, EVENTS = 2**60 + 100, 2**60 + 200
ANA, BOB, CY, DEE = (2**60 + 1001 + i for i in range(4))
_ids = count(2**60 + 5000)


def said(
    lines: list[tuple[int, str]], *, channel: int = GENERAL, every: int = 2, replies: dict[int, int] | None = None
):
    """Turns a minute or two apart; `replies` maps a line's index to the index it replies to."""
    turns: list[Turn] = []
    for i, (who, text) in enumerate(lines):
        reply = turns[replies[i]].message_id if replies and i in replies else None
        turns.append(Turn(next(_ids), channel, who, text, T0 + timedelta(minutes=2 * i), reply))
    return turns


INTERLEAVED = [
    (BOB, "who's in for the chess tournament on saturday? we need eight players for the bracket"),
    (CY, "anyone tried the new ramen place on fifth street?"),
    (DEE, "count me in for the tournament, double elimination bracket please"),
    (ANA, "the ramen place is great, get the spicy miso ramen"),
    (CY, "decided: the tournament starts saturday at ten, double elimination"),
    (DEE, "spicy miso ramen it is then"),
    (BOB, "who brings the chess clocks for the tournament?"),
]


def test_interleaved_conversations_become_their_own_threads():
    turns = said(INTERLEAVED)
    found, _ = threads.segment(turns)
    texts = [[t.text for t in thread.turns] for thread in found]
    assert len(found) == 2
    assert all("tournament" in text for text in texts[0]) and all("ramen" in text for text in texts[1])


def test_replies_and_reactions_go_with_their_thread_and_a_new_subject_opens_one():
    turns = said(
        [
            (BOB, "the server migration to the new host is tonight"),
            (CY, "the ramen place on fifth street is open again"),
            (DEE, "how long?"),  # a reply to bob, sharing no word with him
            (ANA, "lol"),  # a reaction: the conversation at hand
            (BOB, "anyone up for a movie friday?"),  # opens a subject, right after another
        ],
        replies={2: 0},
    )
    found, _ = threads.segment(turns)
    assert [[t.text for t in thread.turns] for thread in found] == [
        ["the server migration to the new host is tonight", "how long?", "lol"],
        ["the ramen place on fifth street is open again"],
        ["anyone up for a movie friday?"],
    ]


def test_channels_never_share_a_thread_and_a_long_silence_ends_one():
    turns = said([(BOB, "tournament bracket on saturday"), (CY, "tournament bracket sounds fun")])
    elsewhere = said([(DEE, "the tournament bracket is up")], channel=EVENTS)
    later = [Turn(next(_ids), GENERAL, ANA, "tournament bracket question", T0 + timedelta(hours=5), None)]
    found, _ = threads.segment(sorted(turns + elsewhere + later, key=lambda t: t.at))
    assert [len(t.turns) for t in found] == [2, 1, 1]


def test_the_central_messages_decisions_and_open_questions_of_a_thread():
    turns = said(INTERLEAVED)
    [tournament, _], weight = threads.segment(turns)
    scores = threads.centrality(tournament, weight)
    keys = threads.keys(tournament, scores)
    decided = turns[4].message_id
    assert decided in keys and turns[0].message_id in keys  # the decision, and who opened it
    assert threads.DECIDES.search(turns[4].text)
    assert threads.open_questions(tournament) == {turns[6].message_id}  # nobody answered the clocks question
    assert threads.title(tournament, weight).startswith("tournament")
    assert threads.about(tournament, ["tournaments"]) and not threads.about(tournament, ["ramen"])


def test_a_round_of_greetings_is_minor_and_an_announcement_is_not():
    greetings, _ = threads.segment(said([(ANA, "gm"), (BOB, "morning!"), (CY, "hey")]))
    assert len(greetings) == 1 and threads.minor(greetings[0])
    news, _ = threads.segment(said([(CY, "the bake sale moved to sunday, same place, bring cookies")]))
    assert not threads.minor(news[0])
