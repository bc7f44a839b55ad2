"""Questions about the past, addressed to the bot: search what was said, and cite where it was found.

Members named in the question ("when did Bob mention his exam?") are read by recall as its subjects: Bob's
own messages count as containing "Bob" (he wrote "my exam"), and everyone's messages are searched too
("Bob's exam is on Friday").
"""

from __future__ import annotations

from datetime import datetime

from bot.memory.directory import Directory
from bot.memory.names import unnamed
from bot.memory.recall import Hit
from bot.memory.recollection import Recollection
from bot.reply.routing import Request

CITED = 5
SNIPPET_CHARS = 300
NEAR = 0.5  # a hit cited beside the best scores at least this share of it
BEARING_COSINE = 0.45  # or means about what the question asks


async def find(
    recollection: Recollection, request: Request, *, now: datetime | None = None, limit: int = CITED
) -> list[Hit]:
    """The best hits for a question, searched from the channel it was asked in."""
    return await recollection.recall(
        request.guild_id, request.text, channel_id=request.channel_id, now=now, limit=limit
    )


def bearing(hits: list[Hit]) -> list[Hit]:
    """The hits worth citing for a question, best first: the best one always, and each other that scores near it and
    bears on the question itself (most of its words, or clearly its meaning), at most CITED. One hit that answers is
    one source: lines of another conversation that merely ranked after it are no support ("when did Bob mention his
    chemistry exam?" cited three lines about someone's cat)."""
    if not hits:
        return []
    best = hits[0]
    cited = [best]
    for hit in hits[1:]:
        if len(cited) == CITED:
            break
        near = hit.score >= NEAR * best.score
        bears = hit.coverage >= 0.5 or hit.cosine >= BEARING_COSINE
        if near and bears and (hit.kind == "message" or best.kind == "summary"):
            cited.append(hit)
    return cited


async def cite(directory: Directory, hits: list[Hit], now: datetime) -> list[str]:
    """'2026-10-03, 7 weeks ago — Bob: “…” <link>' for each hit (names rendered, nothing that pings), with one
    name lookup for all of them."""
    if not hits:
        return []
    guild_id = hits[0].guild_id
    names = await directory.display_names(guild_id, {hit.user_id for hit in hits})
    bodies = await directory.render_all_mentions(guild_id, [hit.text for hit in hits], at=False)
    zone = directory.zone(guild_id)
    lines = []
    for hit, rendered in zip(hits, bodies, strict=True):
        name = names.get(hit.user_id, unnamed(hit.user_id))
        body = rendered if len(rendered) <= SNIPPET_CHARS else rendered[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"
        when = hit.label(now, zone)
        if hit.kind == "summary":
            lines.append(f"{when} — summary of {name}'s day: {body}")
        else:
            lines.append(f"{when} — {name}: “{body}” <{hit.jump_url}>")
    return lines
