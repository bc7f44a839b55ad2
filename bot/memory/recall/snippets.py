"""Snippets: the best hits with the turns around them, and packing them into what the model receives."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.tokens import estimate_tokens
from bot.memory.recall.ranking import Hit
from bot.text import MENTION
from db.search import turns as turn_store
from db.search.turns import ANSWERING
from db.search.types import Turn

SNIPPETS = 200  # hits that may become snippets: the budget decides how many do
NEIGHBOURS = 10  # the best hits also get the message before and after


@dataclass
class Snippet:
    """A hit and the turns around it, oldest first."""

    hit: Hit
    turns: list[Turn]


@dataclass
class Recalled:
    """What recall gives the model for a question: the text it receives, and what that text holds — snippets and
    summaries best first, and the hits (what was prepared but did not fit the budget is not here)."""

    snippets: list[Snippet] = field(default_factory=list)
    summaries: list[Hit] = field(default_factory=list)
    text: str = ""
    hits: list[Hit] = field(default_factory=list)  # for citations: the messages in rank order, then summaries


@dataclass(frozen=True, slots=True)
class Packed:
    """What fitted the budget: the text, and the snippets and summaries it holds (in rank order)."""

    text: str
    snippets: list[Snippet]
    summaries: list[Hit]

    def hits(self, ranked: list[Hit]) -> list[Hit]:
        """Of the ranked message hits, those the text holds (in rank order: one merged into a better hit's snippet
        as its neighbour too), then the summaries it holds."""
        held = {t.message_id for s in self.snippets for t in s.turns}
        return [h for h in ranked if h.message_id in held] + self.summaries


async def snippets_of(
    sessions: async_sessionmaker[AsyncSession],
    guild_id: int,
    hits: list[Hit],
    *,
    here: int | None,
    neighbours: bool,
    until: datetime | None = None,
) -> list[Snippet]:
    """The best hits with the turns around them (the messages beside the NEIGHBOURS best with `neighbours`,
    those written before `until` if given), merged where they touch, best first."""
    best = hits[:SNIPPETS]
    if not best:
        return []
    as_turns = [Turn(h.message_id or 0, h.channel_id or 0, h.user_id, h.text, h.at, h.reply_to_id) for h in best]
    beside = NEIGHBOURS if neighbours else 0
    async with sessions() as session:
        extra = await turn_store.around(session, guild_id, as_turns, here=here, neighbours=beside, until=until)
    by_id = {t.message_id: t for t in [*as_turns, *extra]}
    order: dict[int, list[int]] = {}  # each channel's known messages, oldest first
    for message_id in sorted(by_id):
        order.setdefault(by_id[message_id].channel_id, []).append(message_id)
    snippets: list[Snippet] = []
    taken: dict[int, Snippet] = {}
    for rank, (hit, turn) in enumerate(zip(best, as_turns, strict=True)):
        near = {turn.message_id}
        if turn.reply_to_id in by_id:
            near.add(turn.reply_to_id)  # type: ignore[arg-type]
        near |= {t.message_id for t in extra if t.reply_to_id == turn.message_id}
        if rank < NEIGHBOURS and neighbours:
            extras = {t.message_id for t in extra}
            near |= _beside(turn.message_id, order[turn.channel_id]) & extras
            if turn.text.rstrip().endswith("?"):
                near |= _answers(turn, order[turn.channel_id], by_id) & extras
        joined = next((taken[m] for m in near if m in taken), None)
        if joined is None:
            joined = Snippet(hit, [])
            snippets.append(joined)
        for message_id in near:
            if message_id not in taken:
                taken[message_id] = joined
                joined.turns.append(by_id[message_id])
    for snippet in snippets:
        snippet.turns.sort(key=lambda t: (t.at, t.message_id))
    return snippets


def _answers(asking: Turn, channel: list[int], by_id: dict[int, Turn]) -> set[int]:
    """The turns after a question up to the first by someone else, its likeliest answer (at most ANSWERING): a turn
    that answers counts with the question it answers."""
    i = bisect_left(channel, asking.message_id)
    found: set[int] = set()
    for message_id in channel[i + 1 : i + 1 + ANSWERING]:
        found.add(message_id)
        if by_id[message_id].user_id != asking.user_id:
            break
    return found


def _beside(hit: int, channel: list[int]) -> set[int]:
    """The nearest known messages before and after `hit` in its channel (`channel`: its known ids, in order)."""
    i = bisect_left(channel, hit)
    return set(channel[max(0, i - 1) : i + 2])


def pack(
    snippets: list[Snippet],
    summaries: list[Hit],
    names: dict[int, str],
    *,
    budget: int,
    zone: str,
) -> Packed:
    """Snippets as scenes in rank order within `budget` tokens, then summaries in what they leave: a summary
    retells its day's messages, so it adds only where messages are missing (days past retention, little found)
    and never takes a message's place (stored summaries cost 0.06 of the benchmark's score with a share of their
    own). A scene shows its date once, and again only where the date changes."""
    tz = ZoneInfo(zone)
    blocks: list[str] = []
    kept: list[Snippet] = []
    kept_summaries: list[Hit] = []
    used = 0
    for snippet in snippets:
        turns = snippet.turns
        block = _scene(turns, names, tz)
        cost = estimate_tokens(block) + 1
        while used + cost > budget and len(turns) > 1:
            # Too long for what is left: the turns farthest from its hit go first, so the hit itself still fits (a
            # scene skipped whole took its evidence with it while smaller, worse ones after it fitted).
            turns = _without_farthest(turns, snippet.hit)
            block = _scene(turns, names, tz)
            cost = estimate_tokens(block) + 1
        if used + cost > budget:
            continue  # a smaller snippet further down may still fit
        blocks.append(block)
        kept.append(snippet if turns is snippet.turns else Snippet(snippet.hit, turns))
        used += cost
    for hit in summaries:
        block = f"[{hit.at.astimezone(tz):%Y-%m-%d}] summary of {names.get(hit.user_id, 'someone')}'s day: {hit.text}"
        cost = estimate_tokens(block) + 1
        if used + cost > budget:
            continue
        blocks.append(block)
        kept_summaries.append(hit)
        used += cost
    return Packed("\n\n".join(blocks), kept, kept_summaries)


def _without_farthest(turns: list[Turn], hit: Hit) -> list[Turn]:
    """The scene without its turn farthest in time from the hit (the later one of two as far)."""
    at = hit.at
    farthest = max(range(len(turns)), key=lambda i: (abs((turns[i].at - at).total_seconds()), i))
    return turns[:farthest] + turns[farthest + 1 :]


def _scene(turns: list[Turn], names: dict[int, str], tz: ZoneInfo) -> str:
    """'[2026-06-06] Rui: …' then 'Ana: …' for the same day; a turn on another day is dated again."""
    lines, day = [], ""
    for turn in turns:
        body = MENTION.sub(lambda m: "@" + names.get(int(m.group(1)), "someone"), turn.text)
        said = f"{names.get(turn.user_id, 'someone')}: {body}"
        today = f"{turn.at.astimezone(tz):%Y-%m-%d}"
        lines.append(said if today == day else f"[{today}] {said}")
        day = today
    return "\n".join(lines)
