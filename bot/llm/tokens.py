"""Token estimates for budgets: about four characters a token, erring on the side of more tokens."""

from __future__ import annotations

import re

CHARS_PER_TOKEN = 4
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def estimate_tokens(text: str) -> int:
    """Tokens `text` will take, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def sentences(text: str) -> list[str]:
    """Split prose into sentences (good enough for facts written by people and models)."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def trim_to_chars(text: str, max_chars: int, *, keep: str = "start") -> str:
    """Cut `text` to `max_chars` at a sentence (else word) boundary, keeping the start or the end."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    parts = sentences(text)
    ordered = parts if keep == "start" else list(reversed(parts))
    kept: list[str] = []
    size = 0
    for part in ordered:
        extra = len(part) + (1 if kept else 0)
        if size + extra > max_chars:
            break
        kept.append(part)
        size += extra
    if kept:
        return " ".join(kept if keep == "start" else reversed(kept))
    if max_chars < 2:
        return ""
    # No whole sentence fits: cut at a word boundary and mark the cut, so no reader takes "p to" for a word.
    if keep == "start":
        cut = text[: max_chars - 1]
        return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip() + "…"
    cut = text[-(max_chars - 1) :]
    return "…" + (cut.split(" ", 1)[1] if " " in cut else cut).lstrip()


def trim_to_tokens(text: str, max_tokens: int, *, keep: str = "start") -> str:
    """Cut `text` to a token budget."""
    return trim_to_chars(text, max_tokens * CHARS_PER_TOKEN, keep=keep)
