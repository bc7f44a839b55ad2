"""Filler chat for the recall benchmark guild: banter, small talk, reactions, addressing lines (all from
bench/corpus/filler.json) and chat noise, in sessions around the planted stories (`stream`).

Everything here is generic; topic chatter that shares vocabulary with the questions lives with the stories
(`Kind.chatter`) and is mixed into the sessions here.
"""

from __future__ import annotations

import bisect
import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from bench.conversation_guild import CHANNEL_WEIGHTS, NAMES, NOW, START, Channel, Member, Message, at_hour, snowflake
from bench.conversation_stories import KINDS, POOLS

if TYPE_CHECKING:
    from bench.conversations import Conversation

_FILLER = json.loads((Path(__file__).with_name("corpus") / "filler.json").read_text(encoding="utf-8"))
REACTIONS: tuple[str, ...] = tuple(_FILLER["reactions"])
BANTER: tuple[str, ...] = tuple(_FILLER["banter"])
SMALL_TALK: tuple[str, ...] = tuple(_FILLER["small_talk"])  # slots filled by `fill`
ADDRESS: tuple[str, ...] = tuple(_FILLER["address"])  # {name}: the member addressed

PREFIXES = ("", "", "", "", "ngl ", "honestly ", "lol ", "ok ", "wait ", "tbh ", "random but ")
SUFFIXES = ("", "", "", "", "", " lol", " 😅", " 😂", " !!", " tbh", " haha", " 🙃", " ...", " xD")


def fill(template: str, rng: random.Random, **names: str) -> str:
    """Fill the small-talk slots ({game}, {show}, {dish}, {city}, {book}) and any names given."""
    return template.format(
        game=rng.choice(POOLS["games"]),
        show=rng.choice(POOLS["shows"]),
        dish=rng.choice(POOLS["dishes"]),
        city=rng.choice(POOLS["cities"]),
        book=rng.choice(POOLS["books"]),
        **names,
    )


def typo(text: str, rng: random.Random) -> str:
    """One plausible typo: two neighbouring letters swapped, a letter dropped or doubled."""
    spots = [i for i in range(1, len(text) - 1) if text[i].isalpha() and text[i + 1].isalpha()]
    if not spots:
        return text
    i = rng.choice(spots)
    kind = rng.randrange(3)
    if kind == 0:
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    if kind == 1:
        return text[:i] + text[i + 1 :]
    return text[:i] + text[i] + text[i:]


def roughen(text: str, rng: random.Random, *, typos: float = 0.06) -> str:
    """Chat noise: an occasional prefix, suffix or typo."""
    if rng.random() < 0.3:
        text = rng.choice(PREFIXES) + text + rng.choice(SUFFIXES)
    if rng.random() < typos:
        text = typo(text, rng)
    return text


def _day_counts(total: int, days: list[datetime], rng: random.Random) -> list[int]:
    weights = [(1.3 if d.weekday() >= 5 else 1.0) * rng.gammavariate(4, 0.25) for d in days]
    scale = total / sum(weights)
    counts = [int(w * scale) for w in weights]
    for i in rng.sample(range(len(days)), total - sum(counts)):
        counts[i] += 1
    return counts


class _Filler:
    """Sessions of chat: a few members in one channel, a mix of banter, small talk, topic chatter and addressing."""

    def __init__(self, rng: random.Random, members: dict[str, Member], channels: dict[str, Channel]) -> None:
        self.rng = rng
        self.members = members
        self.channels = channels
        self.activity = [1 / (rank + 1) ** 0.7 for rank in range(len(NAMES))]
        self.chatter: dict[str, list[str]] = defaultdict(list)
        for kind in KINDS:
            self.chatter[kind.channel] += kind.chatter
        self.all_chatter = [line for kind in KINDS for line in kind.chatter]

    def text(self, channel: str, speakers: list[str], author: str) -> str:
        rng, r = self.rng, self.rng.random()
        if r < 0.30:
            text = rng.choice(BANTER)
        elif r < 0.50:
            text = fill(rng.choice(SMALL_TALK), rng)
        elif r < 0.72:
            pool = self.chatter.get(channel) if rng.random() < 0.8 else None
            text = rng.choice(pool or self.all_chatter)
        elif r < 0.85:
            text = rng.choice(REACTIONS)
        else:
            others = [s for s in speakers if s != author] or [n for n in NAMES if n != author]
            name = rng.choice(others)
            text = rng.choice(ADDRESS).format(name=name if rng.random() < 0.3 else name.lower())
        return roughen(text, rng)

    def day(self, day: datetime, count: int) -> list[tuple[datetime, str, str, str, int | None]]:
        """`count` messages on `day` as (time, channel, author, text, index of the message replied to)."""
        rng, out = self.rng, []
        end = day + timedelta(days=1)
        names = list(CHANNEL_WEIGHTS)
        while len(out) < count:
            channel = rng.choices(names, list(CHANNEL_WEIGHTS.values()))[0]
            speakers = rng.choices(NAMES, self.activity, k=rng.randint(2, 5))
            ts = at_hour(day, rng)
            first = len(out)
            for _ in range(min(count - len(out), 1 + int(rng.expovariate(1 / 7)))):
                if ts >= end:
                    break
                author = rng.choice(speakers)
                reply = rng.randrange(first, len(out)) if len(out) > first and rng.random() < 0.1 else None
                out.append((ts, channel, author, self.text(channel, speakers, author), reply))
                ts += timedelta(seconds=rng.expovariate(1 / 70), milliseconds=rng.randrange(1000))
        return out


def stream(conv: Conversation) -> Iterator[Message]:
    """Every message of `conv` in id order: the planted ones, and filler drawn from the seed around them (around the
    first stories: the harder ones, `conv.harder_ids`, are laid on top and change none of it)."""
    rng = random.Random(f"filler-{conv.seed}-{conv.message_count - len(conv.harder_ids)}")
    members = {m.name: m for m in conv.members}
    channels = {c.name: c for c in conv.channels}
    maker = _Filler(rng, members, channels)
    first_day = START.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [first_day + timedelta(days=i) for i in range((NOW - first_day).days + 1)]
    counts = _day_counts(max(0, conv.message_count - len(conv.planted)), days, rng)
    planted_days = [m.timestamp.replace(hour=0, minute=0, second=0, microsecond=0) for m in conv.planted]
    for day, count in zip(days, counts, strict=True):
        lo, hi = bisect.bisect_left(planted_days, day), bisect.bisect_right(planted_days, day)
        batch = conv.planted[lo:hi]
        taken = {int(m.timestamp.timestamp() * 1000) for m in batch if m.message_id not in conv.harder_ids}
        per_ms: Counter[int] = Counter()
        made: list[Message] = []
        for drafted, channel, author, text, reply in maker.day(day, count):
            ms = int(min(drafted, NOW - timedelta(seconds=rng.randrange(1, 36000))).timestamp() * 1000)
            while ms in taken:  # never share a millisecond with a planted message
                ms += 1
            ts = datetime.fromtimestamp(ms / 1000, UTC)
            message_id = snowflake(ts, increment=per_ms[ms])
            per_ms[ms] += 1
            reply_id = made[reply].message_id if reply is not None and made[reply].message_id < message_id else None
            made.append(Message(message_id, channels[channel].id, members[author].id, text, ts, reply_id))
        yield from sorted([*batch, *made], key=lambda m: m.message_id)
