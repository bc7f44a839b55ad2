"""Trimming to a budget: whole sentences when they fit, else whole words with the cut marked; never over."""

from __future__ import annotations

import pytest

from bot.llm.tokens import trim_to_chars

TEXT = "Ana likes tea. Ana flies gliders on weekends. Ana is vegetarian."


@pytest.mark.parametrize("limit", range(0, len(TEXT) + 2))
@pytest.mark.parametrize("keep", ["start", "end"])
def test_never_over_the_limit_and_never_a_broken_word(limit, keep):
    out = trim_to_chars(TEXT, limit, keep=keep)
    assert len(out) <= limit
    if limit < 12:
        return  # room for less than a word or two: a marked hard cut is all that fits
    words = set(TEXT.replace(".", "").split())
    assert all(w.strip("….") in words for w in out.split() if w.strip("…."))


def test_sentences_first_then_marked_word_cuts():
    assert trim_to_chars(TEXT, 40) == "Ana likes tea."
    assert trim_to_chars(TEXT, 40, keep="end") == "Ana is vegetarian."
    assert trim_to_chars('"message 8 about the trip to Lisbon"', 20, keep="end") == '…trip to Lisbon"'
    assert trim_to_chars('"message 8 about the trip to Lisbon"', 20) == '"message 8 about…'
