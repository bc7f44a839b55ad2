"""Planting the harder stories of issue 38 (bench/corpus/stories_harder.json) beside the first ones.

Where recall was seen to fail on conversations it never saw: an answer spread over several conversations of the
subject days to weeks apart (`spread`), an answer in the subject's reply to another member's question sharing no word
with what is asked later (`answered_by_other`), and a fact said by the other one of a pair than the member the
question names (`wrong_speaker`).

They are planted after the first stories, from a random stream of their own, with ids of their own (worker 2 of the
snowflake) in milliseconds no first story uses: the first stories' messages, questions and the filler drawn around
them are what they were, and the new columns of the tables come on top.
"""

from __future__ import annotations

import random
from collections import defaultdict

from bench.conversation_guild import (
    MAX_AGE_DAYS,
    MIN_AGE_DAYS,
    NAMES,
    Channel,
    Member,
    Message,
    Question,
    at_hour,
    day_at_age,
)
from bench.conversation_planting import INSTANCES_PER_KIND, Job, Planter, finish
from bench.conversation_stories import HARDER_KINDS, Kind

WORKER = 2  # the snowflake worker of the harder stories' messages (the first stories use 1, the filler 0)
GAP_DAYS = (3.0, 30.0)  # between a spread story's scenes
OWN_LINES = 3  # a wrong_speaker subject's own lines on the topic at other times


class _HarderPlanter(Planter):
    """The first stories' planter, with spread scenes and look-alikes around every scene."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.placed: list[tuple[float, str]] = []  # the current instance's scenes: age in days and channel

    def slots(self, kind: Kind) -> dict[str, str]:
        """Slots drawing from the same values never repeat one ({dish1}, {dish2}: two different dishes)."""
        slots: dict[str, str] = {}
        used: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for key, values in kind.slots.items():
            slots[key] = self.rng.choice([v for v in values if v not in used[values]])
            used[values].add(slots[key])
        return slots

    def plant_evidence(self, kind: Kind, names: dict, slots: dict, age: float):
        if kind.qtype != "spread":
            self.placed = [(age, kind.channel)]
            return super().plant_evidence(kind, names, slots, age)
        rng = self.rng
        gaps = [rng.uniform(*GAP_DAYS) for _ in kind.scenes[1:]]
        age = max(age, MIN_AGE_DAYS + 1 + sum(gaps))  # the last scene at least a month old too
        evidence, self.placed = [], []
        for i, lines in enumerate(kind.scenes):
            channel = kind.channel_of(i)
            evidence += self.scene(kind, lines, at_hour(day_at_age(age), rng), names, slots, channel=channel)
            self.placed.append((age, channel))
            age -= gaps[i] if i < len(gaps) else 0
        return evidence, "", None

    def around(self, kind: Kind, names: dict[str, str]) -> None:
        """The topic's chatter by someone else within days of each scene; a wrong_speaker subject's own lines on the
        topic at other times (one recent): what the member the question names said, besides the answer."""
        rng = self.rng
        for age, channel in self.placed:
            text = rng.choice(kind.chatter)
            author = rng.choice(self.others(names["S"], names["A"]))
            self.loose(text, channel, author, max(1.0, age + rng.uniform(-3, 3)), "around")
        if kind.qtype == "wrong_speaker":
            texts = rng.sample(kind.chatter, min(OWN_LINES, len(kind.chatter)))
            ages = [rng.uniform(1, 25)] + [rng.uniform(20, 440) for _ in texts[1:]]
            for text, age in zip(texts, ages, strict=False):
                self.loose(text, kind.channel, names["S"], age, "lookalike")

    def not_asking(self, kind: Kind, names: dict[str, str]) -> tuple[str, ...]:
        return (names["A"],)  # the other one of the pair knows


def jobs(rng: random.Random) -> list[Job]:
    """Every harder kind for INSTANCES_PER_KIND members, evidence 1-12 months old (a spread story's first scene is
    moved back when its last would be newer than a month)."""
    drawn = [(kind, subject) for kind in HARDER_KINDS for subject in rng.sample(NAMES, INSTANCES_PER_KIND)]
    rng.shuffle(drawn)
    span = MAX_AGE_DAYS - MIN_AGE_DAYS - 2
    ages = [MIN_AGE_DAYS + 1 + span * (i + rng.random()) / len(drawn) for i in range(len(drawn))]
    rng.shuffle(ages)
    return [(kind, subject, age) for (kind, subject), age in zip(drawn, ages, strict=True)]


def plant_harder(
    seed: int, members: dict[str, Member], channels: dict[str, Channel], first: list[Message]
) -> tuple[list[Message], dict[int, str], list[Question]]:
    """The harder stories for `seed`, beside the `first` planted messages: their messages in time order, roles and
    questions."""
    rng = random.Random(f"stories-harder-{seed}")
    planter = _HarderPlanter(rng)
    for kind, subject, age in jobs(rng):
        planter.instance(kind, subject, age)
    used_ms = {int(m.timestamp.timestamp() * 1000) for m in first}
    return finish(planter, members, channels, worker=WORKER, used_ms=used_ms)
