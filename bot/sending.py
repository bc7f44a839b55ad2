"""Preparing text for Discord: split at the 2,000-character limit without breaking code blocks, defuse pings.

`AllowedMentions.none()` on every send is the real guarantee; defusing the text as well means a copied
answer, a log line or a webhook never carries a live `@everyone` either.
"""

from __future__ import annotations

import re

DISCORD_LIMIT = 2000
_ZWSP = "\u200b"
_MASS = re.compile(r"@(everyone|here)")
_PINGS = re.compile(r"<@([!&]?)(\d{15,20})>")
_FENCE = re.compile(r"^```")


def defuse(text: str) -> str:
    """Make `@everyone`, `@here`, user and role mentions inert while keeping them readable."""
    text = _MASS.sub(lambda m: f"@{_ZWSP}{m.group(1)}", text)
    return _PINGS.sub(lambda m: f"<@{_ZWSP}{m.group(1)}{m.group(2)}>", text)


def split_message(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Split into chunks of at most `limit` characters, on paragraph, line, sentence or word boundaries.

    A code block cut in two is closed at the end of one chunk and reopened (same language) at the start
    of the next, so each chunk renders on its own.
    """
    text = text.strip()
    if not text:
        return []
    chunks: list[str] = []
    reopen = ""
    while text:
        budget = limit - len(reopen)
        if len(text) <= budget:
            chunks.append(reopen + text)
            break
        cut = _best_cut(text, budget - 4)  # room to close a fence: "\n```"
        piece = text[:cut].rstrip()
        text = text[cut:].lstrip("\n ")
        fence = _open_fence(reopen + piece)
        if fence is not None:
            chunks.append(reopen + piece + "\n```")
            reopen = fence + "\n"
        else:
            chunks.append(reopen + piece)
            reopen = ""
    return [c for c in chunks if c.strip()]


def _best_cut(text: str, budget: int) -> int:
    window = text[:budget]
    for boundary in ("\n\n", "\n", ". ", "! ", "? ", " "):
        at = window.rfind(boundary)
        if at > budget // 3:
            return at + len(boundary.rstrip(" ")) if boundary.strip() else at + len(boundary)
    return budget


def _open_fence(chunk: str) -> str | None:
    """The opening fence (with its language) if `chunk` ends inside a code block, else None."""
    opened: str | None = None
    for line in chunk.splitlines():
        if _FENCE.match(line.strip()):
            opened = None if opened is not None else line.strip()
    return opened
