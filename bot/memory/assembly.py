"""What a reply receives from memory, assembled in this one place: replies, `python -m bot recall`, `python -m bot
prompt` and every benchmark read it here, so what one prints is what another sends.

The parts, in order: what memory holds about the author (their facts; their merged context — facts, today, the
last week, earlier — when the message is about them), the facts of every member the message mentions, and the
recall for the message (snippets of what was said around the best hits, then summaries in what they leave), packed
to the recall budget. Recall runs beside the context build and is bounded by MEMORY_WAIT_SECONDS: a reply goes on
without what is not ready, as it goes on without a context that is not ready.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.lifecycle import abandon
from bot.memory.recall import Found, Recalled
from bot.text import MENTION

log = logging.getLogger(__name__)
RECALLED = "Recalled conversation:"


@dataclass(frozen=True)
class Remembered:
    """What memory gives a reply: the text the model receives (None: nothing), the recall in it, and whose data and
    which stored messages that text holds (the reply's provenance: what the model was shown, nothing more)."""

    text: str | None
    recalled: Recalled
    members: frozenset[int]
    quoted: frozenset[int]


@dataclass(frozen=True)
class Asked:
    """The message a reply is for: where, by whom, what it says, whom it mentions, and its stored id."""

    guild_id: int
    author_id: int
    text: str
    channel_id: int | None = None
    mentioned: tuple[int, ...] = ()
    message_id: int | None = None


Context = Callable[[int, int], Awaitable[str | None]]
FactsOf = Callable[[int, int], Awaitable[str | None]]
NameOf = Callable[[int, int], Awaitable[str]]
Recollect = Callable[["Asked", "asyncio.Future[Found] | None"], Awaitable[Recalled]]


async def assemble(
    asked: Asked,
    *,
    context: Context,
    facts_of: FactsOf,
    name_of: NameOf,
    recollect: Recollect,
    wait_seconds: float,
    found: asyncio.Future[Found] | None = None,
) -> Remembered:
    """The memory text for `asked` and its provenance (see the module docstring)."""
    parts, members = [], {asked.author_id}
    recalling = asyncio.ensure_future(_within(recollect(asked, found), wait_seconds, asked.guild_id))
    try:
        # The author's days (today, the last week, earlier) only when the message is about them: elsewhere they
        # carried an answer almost never and took ~800 of ~2,900 tokens; their facts are always there.
        if await about_author(asked, name_of):
            mine = await context(asked.guild_id, asked.author_id)
        else:
            mine = await facts_of(asked.guild_id, asked.author_id)
        if mine:
            parts.append(mine)
        for user_id in sorted(mentioned(asked) - {asked.author_id}):
            if about := await facts_of(asked.guild_id, user_id):
                parts.append(f"About {await name_of(asked.guild_id, user_id)}: {about}")
                members.add(user_id)
        recalled = await recalling
    except BaseException:
        # Storage away under the context or a member's facts: the recall beside them (and the search it may not have
        # begun to await yet) is stopped, and what it met is read, not left for asyncio to report.
        abandon(recalling, name="recall of a reply that failed")
        if found is not None:
            abandon(found, name="recall search of a reply that failed")
        raise
    quoted: set[int] = set()
    if recalled.text:
        parts.append(f"{RECALLED}\n{recalled.text}")
        # Provenance is what the model was shown: the turns packed (and whom they name), the summaries packed.
        turns = [t for s in recalled.snippets for t in s.turns]
        members |= {t.user_id for t in turns} | {h.user_id for h in recalled.hits}
        members |= {int(m) for t in turns for m in MENTION.findall(t.text)}
        quoted |= {t.message_id for t in turns}
    return Remembered("\n".join(parts) or None, recalled, frozenset(members), frozenset(quoted))


FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|im|i've|i'd|i'll)\b", re.IGNORECASE)


async def about_author(asked: Asked, name_of: NameOf) -> bool:
    """Whether a message is about its author: in the first person, or naming or mentioning them."""
    if FIRST_PERSON.search(asked.text) or asked.author_id in mentioned(asked):
        return True
    name = (await name_of(asked.guild_id, asked.author_id)).casefold()
    return bool(name) and re.search(rf"\b{re.escape(name)}\b", asked.text.casefold()) is not None


def mentioned(asked: Asked) -> set[int]:
    """Everyone the message mentions, by its text or by Discord's list."""
    return {int(m) for m in MENTION.findall(asked.text)} | set(asked.mentioned)


async def _within(recalling: Awaitable[Recalled], seconds: float, guild_id: int) -> Recalled:
    try:
        return await asyncio.wait_for(recalling, seconds)
    except TimeoutError:
        log.warning("recall for a message in guild %s took too long; replying without it", guild_id)
        return Recalled()
