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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

STORIES = Path(__file__).with_name("corpus") / "stories.json"


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


def load(path: Path = STORIES) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], tuple[Kind, ...]]:
    """The question types, the shared slot pools (books, cities, …) and the story templates, in the file's order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    pools = {name: tuple(values) for name, values in data["pools"].items()}

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
        )

    return tuple(data["types"]), pools, tuple(kind(d) for d in data["kinds"])


TYPES, POOLS, KINDS = load()
