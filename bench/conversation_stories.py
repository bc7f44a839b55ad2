"""The stories of the recall benchmark guild (bench/corpus/stories.json): what members once said, and what others later
ask about it.

A `Kind` is a story template. `bench.conversation_planting` instantiates every kind for a few members (its subjects);
each instance plants evidence messages inside small chat scenes, look-alike distractors (recent chatter on the same
topic, the same kind of scene at other times, messages that merely address the subject) and one question.

Scene lines are written `[*][^]ROLE: text`: `*` marks evidence, `^` makes the line a Discord reply to the line before,
ROLE is S (the subject), A or B (two other members fixed for the instance) or X (anyone else). A text of `~` is a
generic reaction. Alternative wordings are separated by ` | `; `{slot}` names come from `slots` (one value per
instance, or per occurrence for temporal kinds) and {S}/{s}, {A}/{a}, {B}/{b} are the members' names (capitalised /
lower case). Question templates may use {when} (temporal kinds: a time expression for the evidence's date).

The first stories (the five types of `BASE_TYPES`) are bench/corpus/stories.json; the harder ones of issue 38
(`HARDER_TYPES`: evidence spread over several scenes, answered by the other member, said by the other one of a
pair) are bench/corpus/stories_harder.json, planted apart (`bench.conversation_harder`) so that the first stories,
their questions and the filler drawn around them stay what they were. A harder kind may name a channel per scene
(`channels`); it draws slots sharing a pool without repeats ({dish1}, {dish2}, … are different dishes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

STORIES = Path(__file__).with_name("corpus") / "stories.json"
HARDER = Path(__file__).with_name("corpus") / "stories_harder.json"
OVERALL = "overall"
OVERALL_BASE = "overall, old types"  # the question set "overall" was before issue 38: the five first types


@dataclass(frozen=True)
class Kind:
    """A story template; see the module docstring for the line syntax."""

    key: str
    qtype: str
    channel: str
    scenes: tuple[tuple[str, ...], ...]
    questions: tuple[str, ...]
    answer: str
    chatter: tuple[str, ...]
    slots: dict[str, tuple[str, ...]] = field(default_factory=dict)
    address: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()  # a channel per scene, when they differ (harder kinds)

    def channel_of(self, scene: int) -> str:
        return self.channels[scene] if self.channels else self.channel


def load(
    path: Path = STORIES, shared: dict[str, tuple[str, ...]] | None = None
) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], tuple[Kind, ...]]:
    """The question types, the slot pools (books, cities, …; the file's own beside `shared`) and the story
    templates, in the file's order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    pools = {**(shared or {}), **{name: tuple(values) for name, values in data.get("pools", {}).items()}}

    def kind(d: dict) -> Kind:
        # A slot given as a string draws from the shared pool of that name.
        slots = {k: pools[v] if isinstance(v, str) else tuple(v) for k, v in d.get("slots", {}).items()}
        return Kind(
            d["key"],
            d["qtype"],
            d["channel"],
            tuple(tuple(scene) for scene in d["scenes"]),
            tuple(d["questions"]),
            d["answer"],
            tuple(d["chatter"]),
            slots,
            tuple(d.get("address", ())),
            tuple(d.get("channels", ())),
        )

    return tuple(data["types"]), pools, tuple(kind(d) for d in data["kinds"])


def score_keys(qtype: str) -> tuple[str, ...]:
    """The columns a question of `qtype` counts in: its type's, "overall", and the old overall if it is one of the
    first five types (bench.conversation_e2e counts its multi-part questions there too, as it did)."""
    return (qtype, OVERALL, OVERALL_BASE) if qtype in BASE_TYPES else (qtype, OVERALL)


BASE_TYPES, POOLS, KINDS = load()  # the first stories: the filler and bench.soak draw on these alone
HARDER_TYPES, _, HARDER_KINDS = load(HARDER, POOLS)
TYPES = BASE_TYPES + HARDER_TYPES
REPORTED = (OVERALL, OVERALL_BASE, *TYPES)  # the columns of every table, in order
