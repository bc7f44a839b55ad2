"""Splitting at Discord's limit without breaking code blocks, and defusing pings."""

from __future__ import annotations

import re

from bot.sending import DISCORD_LIMIT, defuse, split_message


def test_short_text_is_one_chunk():
    assert split_message("hello") == ["hello"]
    assert split_message("   ") == []


def test_paragraphs_are_preferred_boundaries():
    text = ("a" * 1500) + "\n\n" + ("b" * 1500)
    assert split_message(text) == ["a" * 1500, "b" * 1500]


def test_sentences_when_no_paragraphs():
    sentence = "This is a sentence of moderate length. "
    chunks = split_message(sentence * 120)
    assert all(len(c) <= DISCORD_LIMIT for c in chunks)
    assert all(c.endswith(".") for c in chunks)
    assert "".join(c + " " for c in chunks).split() == (sentence * 120).split()


def test_4000_characters_with_a_code_block_keep_every_chunk_renderable():
    code = "\n".join(f"    print('line {i}')" for i in range(150))
    text = "Here is the script:\n\n```python\n" + code + "\n```\n\nAnd that is all. " + "Words " * 200
    assert len(text) > 4000
    chunks = split_message(text)
    assert len(chunks) >= 3
    for chunk in chunks:
        assert len(chunk) <= DISCORD_LIMIT
        assert len(re.findall(r"^```", chunk, re.M)) % 2 == 0, chunk[-50:]
    assert chunks[1].startswith("```python\n")
    joined = "\n".join(chunks)
    for i in range(150):
        assert f"print('line {i}')" in joined


def test_one_huge_word_is_hard_cut():
    chunks = split_message("x" * 4500)
    assert [len(c) for c in chunks] == [1996, 1996, 508]


def test_defuse_everything_that_could_ping():
    text = "@everyone @here <@123456789012345678> <@!123456789012345678> <@&123456789012345678>"
    out = defuse(text)
    assert "@everyone" not in out and "@here" not in out
    assert not re.search(r"<@[!&]?\d+>", out)
    assert out.replace("\u200b", "") == text
