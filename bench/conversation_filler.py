"""Filler chat for the recall benchmark guild: banter, small talk, reactions, addressing lines (all from
bench/corpus/filler.json), and chat noise.

Everything here is generic; topic chatter that shares vocabulary with the questions lives with the stories
(`Kind.chatter`) and is mixed in by `bench.conversations`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from bench.conversation_stories import POOLS

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
