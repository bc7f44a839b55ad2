"""Ranking recall's candidates: a named author outranks "recently", which is gentle and follows the guild's own
span. Through `Recollection.recall` on both databases (the recent part is read from the stored messages)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.memory.manager import MemoryManager
from bot.memory.recall.ranking import RECENCY, RECENT_BONUS, WHO_BONUS
from tests.factories import ALICE, BOB, GUILD, T0, message

NOW = T0


async def said(memory: MemoryManager, corpus: list[tuple[float, int, str, str]]) -> dict[int, int]:
    """(days before NOW, author, their name, text) stored; each author's message id."""
    ids = {}
    for days, author, name, text in corpus:
        memory.directory.note_name(GUILD, author, name, name)
        msg = message(text, author=author, name=name, at=NOW - timedelta(days=days))
        ids[author] = msg.message_id
        await memory.intake.message(msg)
    await memory.flush()
    return ids


def test_recency_is_never_as_strong_as_a_name():
    assert RECENCY < RECENT_BONUS < WHO_BONUS


async def test_a_named_author_outranks_a_recent_message_saying_the_same(memory):
    sunset = "I painted a sunset over the lake"
    ids = await said(memory, [(200, ALICE, "melanie", sunset), (2, BOB, "bob", sunset)])
    hits = await memory.recollection.recall(GUILD, "what did melanie paint recently?", now=NOW)
    assert [h.message_id for h in hits[:2]] == [ids[ALICE], ids[BOB]]


async def test_recently_follows_the_guilds_own_span_not_a_calendar_month(memory):
    """A guild quiet for two months: "recently" is its last stretch of talk, a gentle nudge within it."""
    carol = BOB + 1
    ids = await said(
        memory,
        [
            (700, carol, "carol", "hello everyone"),
            (300, ALICE, "alice", "the blue kettle broke again"),
            (70, BOB, "bob", "the blue kettle broke again"),
        ],
    )
    hits = {h.message_id: h.score for h in await memory.recollection.recall(GUILD, "kettle broke recently?", now=NOW)}
    plain = {h.message_id: h.score for h in await memory.recollection.recall(GUILD, "kettle broke?", now=NOW)}
    # 70 days ago is in the recent part of a guild that spoke for 630 days; the prior alone would give ≤ RECENCY.
    assert hits[ids[BOB]] - hits[ids[ALICE]] == pytest.approx(plain[ids[BOB]] - plain[ids[ALICE]] + RECENT_BONUS)
