"""What counts as people's speech, and the words a message stands for: one rule, live and on import.

Only people's messages feed memory: system notices (joins, pins, thread created, calls, boosts, renames …)
are skipped, whatever fallback text they carry. A message without text still says something when it
carries files, stickers or a forwarded message: their names and the forwarded text are its words.
"""

from __future__ import annotations

from collections.abc import Sequence

# DiscordChatExporter writes the kinds it names ("Default", "Reply") and numbers for the others; 20 and 23
# are replies to slash commands and context-menu commands (written by apps, so bots).
EXPORT_SPEECH = frozenset({"Default", "Reply", "0", "19", "20", "23"})


def spoken(
    content: str,
    *,
    files: Sequence[str] = (),
    stickers: Sequence[str] = (),
    forwarded: str | None = None,
    forwarded_files: Sequence[str] = (),
    forwarded_stickers: Sequence[str] = (),
) -> str:
    """The text memory keeps for a message: its content, then what it forwards, its files and its stickers."""
    parts = [content.strip()] if content.strip() else []
    if forwarded is not None:
        inner = [forwarded.strip()] if forwarded.strip() else []
        inner += [f"[attachment: {name}]" for name in forwarded_files if name]
        inner += [f"[sticker: {name}]" for name in forwarded_stickers if name]
        if inner:
            parts.append("[forwarded message] " + " ".join(inner))
    parts += [f"[attachment: {name}]" for name in files if name]
    parts += [f"[sticker: {name}]" for name in stickers if name]
    return "\n".join(parts)
