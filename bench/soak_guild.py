"""The guild bench.soak lives through: a year of the recall benchmark's chat, the bot asked every day, questions
planted before each checkpoint.

The guild is the recall benchmark's (`bench.conversations`: 16 members, 9 channels, filler of banter, small talk and
topic chatter, a day's volume varying from tens to over a thousand messages) with stories of its own: before each
checkpoint of the soak, every non-temporal story kind is planted twice (`TELLINGS`) with its evidence "weeks" back
(the newest evidence 2-6 weeks before the checkpoint) and, from month 6, twice more "months" back (3-7 months), each
time told by a member who has not told that kind before. So a checkpoint
asks questions of the same ages as every other checkpoint: what changes between month 1 and month 12 is the guild
around them, not the questions. Temporal kinds stay out (their wording, "about 3 months ago", is fixed to the
benchmark's NOW).

The guild's first 85 days are its history before the bot came (imported at the start of the soak, as an admin
would); the soak lives the following 12 months. Of those messages, `ADDRESSED` (5 %) are written to the bot instead:
questions about the past, chat, "remember that …" — and answered through the real reply path.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import datetime, timedelta

from bench.conversation_guild import GUILD_ID, GUILD_NAME, NAMES, NOW, Message, Question
from bench.conversation_planting import Job, plant
from bench.conversation_stories import KINDS
from bench.conversations import Conversation

LIVED_DAYS = 365
LIVES_FROM = NOW - timedelta(days=LIVED_DAYS)  # the bot joins here; what came before is imported
MONTH = LIVED_DAYS / 12
CHECKPOINTS = (1, 3, 6, 12)
ADDRESSED = 0.05
BANDS = {"weeks": (14.0, 42.0), "months": (90.0, 210.0)}  # the newest evidence's age at the checkpoint, in days
MONTHS_FROM = 6  # the "months" band is asked from this checkpoint on (earlier ones have too little past)
# Each kind told this many times per checkpoint and band (by different members): one telling gave ~50 questions per
# checkpoint and band, a share's standard error ±0.065, so two checkpoints could differ by 0.1 from the draw alone.
TELLINGS = 2


def checkpoint_at(month: int) -> datetime:
    """When a checkpoint is: `month` months after the bot joined (the last just before the guild's NOW)."""
    return min(LIVES_FROM + timedelta(days=MONTH * month), NOW - timedelta(hours=6))


@dataclass(frozen=True)
class Asked:
    """A planted question, asked at one checkpoint, of one band."""

    question: Question
    month: int
    band: str


def _jobs(rng: random.Random, tellings: int) -> list[tuple[Job, int]]:
    # Each member tells each story kind once in the year: a second telling with another answer would make the later
    # question ambiguous ("which city did Ravi move to?"), and a checkpoint's questions would then be harder than an
    # earlier one's for a reason that is the generator's, not the memory's.
    tellers = {kind.key: iter(rng.sample(NAMES, len(NAMES))) for kind in KINDS}
    jobs: list[tuple[Job, int]] = []
    for month in CHECKPOINTS:
        before = (NOW - checkpoint_at(month)).total_seconds() / 86400
        for band, (low, high) in BANDS.items():
            if band == "months" and month < MONTHS_FROM:
                continue
            for kind in KINDS:
                if kind.qtype == "temporal":
                    continue
                # A multi story's second scene comes 14-70 days after its first: its first is planted that much
                # earlier, so that the newest evidence lands in the band.
                extra = 42.0 if kind.qtype == "multi" else 0.0
                for _ in range(tellings):
                    age = before + rng.uniform(low, high - 4) + extra
                    jobs.append(((kind, next(tellers[kind.key]), age, before), month))
    return jobs


def soak_guild(messages: int, seed: int = 7, tellings: int = TELLINGS) -> tuple[Conversation, list[Asked]]:
    """The guild (about `messages` messages over 15 months) and each checkpoint's questions, each story kind told
    `tellings` times per checkpoint and band."""
    rng = random.Random(f"soak-{seed}")
    scheduled = _jobs(rng, tellings)
    planted, roles, questions, members, channels = plant(seed, [job for job, _ in scheduled])
    conv = Conversation(
        GUILD_ID,
        GUILD_NAME,
        NOW,
        list(members.values()),
        list(channels.values()),
        questions,
        messages,
        seed,
        planted,
        roles,
    )
    when = {m.message_id: m.timestamp for m in planted}
    asked = []
    for question, (_, month) in zip(questions, scheduled, strict=True):
        at = checkpoint_at(month)
        newest = (at - max(when[i] for i in question.evidence_ids)).total_seconds() / 86400
        band = next((name for name, (low, high) in BANDS.items() if low <= newest <= high), None)
        if band is not None:  # a second scene drawn late (or early) may leave the band: not asked
            asked.append(Asked(question, month, band))
    return conv, asked


# What members write to the bot besides the planted questions: questions about anyone's past, chat, facts.
_CHAT = (
    "elefant how's it going?",
    "hey elefant, any ideas for dinner tonight?",
    "@Elefant what do you think about pineapple on pizza",
    "elefant, tell me something fun",
    "elefant are you awake",
    "good morning elefant!",
    "elefant what should I watch tonight?",
    "thanks elefant",
    "elefant, how was your day?",
    "elefant lol",
)
_FACTS = (
    "I like green tea",
    "I am vegetarian",
    "I play the bass",
    "my cat is called Miso",
    "I work night shifts",
    "I'm learning Portuguese",
    "I moved to a new flat",
    "I run on Sundays",
)


def addressed_text(rng: random.Random) -> str:
    """One message to the bot, as members write them: half questions about the past, a third chat, the rest facts."""
    roll = rng.random()
    if roll < 0.5:
        kind = rng.choice([k for k in KINDS if k.qtype != "temporal"])
        slots = {key: rng.choice(values) for key, values in kind.slots.items()}
        question = rng.choice(kind.questions).format(S=rng.choice(NAMES), when="", **slots)
        return rng.choice(("elefant, ", "hey elefant ", "@Elefant ")) + question
    if roll < 0.85:
        return rng.choice(_CHAT)
    return f"elefant, remember that {rng.choice(_FACTS)}"


def lived(conv: Conversation, seed: int = 7) -> Iterator[tuple[Message, bool]]:
    """The messages from the bot's arrival on, in time order, each with whether it is written to the bot (filler
    only: the planted stories are said among members)."""
    rng = random.Random(f"soak-addressed-{seed}")
    planted = {m.message_id for m in conv.planted}
    for message in conv.iter_messages():
        if message.timestamp < LIVES_FROM:
            continue
        if message.message_id not in planted and rng.random() < ADDRESSED:
            yield Message(message.message_id, message.channel_id, message.author_id, addressed_text(rng),
                          message.timestamp), True  # fmt: skip
        else:
            yield message, False


class History(Conversation):
    """The guild before the bot came, as its DiscordChatExporter export holds it (bench.conversations.write_exports)."""

    @classmethod
    def of(cls, conv: Conversation) -> History:
        return cls(**{f.name: getattr(conv, f.name) for f in fields(conv)})

    def iter_messages(self) -> Iterator[Message]:
        for message in super().iter_messages():
            if message.timestamp >= LIVES_FROM:
                return
            yield message
