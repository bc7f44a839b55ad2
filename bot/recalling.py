"""Questions about the past, addressed to the bot: search what was said, and cite where it was found.

Members named in the question ("when did Bob mention his exam?") are read by recall as its subjects: Bob's
own messages count as containing "Bob" (he wrote "my exam"), and everyone's messages are searched too
("Bob's exam is on Friday").
"""

from __future__ import annotations

from datetime import datetime

from bot.conversation import Request
from bot.memory.manager import MemoryManager
from bot.memory.recall import Hit

CITED = 5
SNIPPET_CHARS = 300


async def find(
    memory: MemoryManager, request: Request, *, now: datetime | None = None, limit: int = CITED
) -> list[Hit]:
    """The best hits for a question, searched from the channel it was asked in."""
    return await memory.recall(request.guild_id, request.text, channel_id=request.channel_id, now=now, limit=limit)


async def cite(memory: MemoryManager, hit: Hit, now: datetime) -> str:
    """'2026-10-03, 7 weeks ago — Bob: “…” <link>' (names rendered, nothing that pings)."""
    name = await memory.name(hit.guild_id, hit.user_id)
    body = await memory.render_mentions(hit.guild_id, hit.text, at=False)
    body = body if len(body) <= SNIPPET_CHARS else body[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"
    when = hit.label(now, memory.zone(hit.guild_id))
    if hit.kind == "summary":
        return f"{when} — summary of {name}'s day: {body}"
    return f"{when} — {name}: “{body}” <{hit.jump_url}>"
