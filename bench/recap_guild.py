"""The recap benchmark's guild: one busy day with planted threads of conversation among filler, and a member who
leaves in the morning and comes back in the evening.

`day(seed, filler)` builds it: at 09:00 the asker says goodbye; two planted threads happen before that, AFTER planted
threads after it (each in a random channel, several in one channel interleaving), and `filler` messages of banter,
small talk and reactions (bench/corpus/filler.json) run all day in every channel. A planted thread has an opener and
a decision (its key messages, which a recap should link), replies that partly reply on Discord, and sometimes a
question nobody answers. At 18:00 the asker is back.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.conversation_guild import NAMES

GUILD = 1_190_000_000_000_000_001
CHANNELS = {name: 1_190_000_000_000_000_100 + i for i, name in enumerate(("general", "gaming", "events", "off-topic"))}
MEMBERS = {name: 1_190_000_000_000_001_000 + i for i, name in enumerate(NAMES[:12])}
ASKER = MEMBERS["Ana"]
DAY = datetime(2026, 11, 20, tzinfo=UTC)
LEAVES, BACK = DAY.replace(hour=9), DAY.replace(hour=18)
BEFORE, AFTER = 2, 4
FILLER = json.loads((Path(__file__).with_name("corpus") / "filler.json").read_text(encoding="utf-8"))
SLOTS = {
    "game": ("Hades", "Factorio", "Elden Ring", "Stardew", "Celeste", "Balatro"),
    "book": ("Dune", "Piranesi", "Circe", "The Hobbit"),
    "show": ("Severance", "Bluey", "The Bear", "Arcane"),
    "dish": ("pho", "tacos", "curry", "dumplings"),
    "city": ("Lisbon", "Osaka", "Oslo", "Montreal"),
}

# (topic, opener, replies, decision, a question nobody answers)
TOPICS = (
    (
        "tournament",
        "who's in for the chess tournament on saturday? we need eight players",
        [
            "count me in, can the bracket be double elimination?",
            "bracket seeded by last season's ratings please",
            "I can bring two chess clocks",
            "eight players is tight, invite the juniors club?",
            "what time control, rapid or blitz?",
            "rapid 15+10 is fair for everyone",
        ],
        "decided: the tournament starts saturday at ten, double elimination, rapid 15+10",
        "who books the community hall for the tournament?",
    ),
    (
        "bake sale",
        "the school bake sale moved to sunday, we need bakers",
        [
            "I'll bake lemon bars for the sale",
            "can we price everything at two dollars?",
            "brownies from me, gluten free",
            "who has the cash box from last year?",
            "we need a table near the entrance",
            "I'll make a sign for the sale",
        ],
        "agreed: bake sale sunday from noon, everything two dollars, tables at the entrance",
        "does anyone have a card reader for the bake sale?",
    ),
    (
        "migration",
        "heads up: the server migration to the new host is tonight",
        [
            "how long will the downtime be?",
            "the database backup finished an hour ago",
            "will the bots come back by themselves?",
            "I moved the dns records already",
            "new host has twice the ram",
            "we should test the restore first",
        ],
        "final: migration starts at 22:00, about an hour of downtime, backup restored on the new host first",
        "who watches the migration logs overnight?",
    ),
    (
        "camping",
        "camping trip to the lake next weekend, who's coming?",
        [
            "I'm in, I have a four person tent",
            "is there firewood at the campsite?",
            "I'll drive, three seats free",
            "bring bug spray, the lake is full of mosquitoes",
            "can we rent canoes there?",
            "I'll plan meals for two days",
        ],
        "let's go with the north lake campsite, leaving friday at five",
        "who has a camping stove we can borrow?",
    ),
    (
        "book club",
        "book club pick for december: sci-fi or mystery?",
        [
            "sci-fi please, we did a mystery last month",
            "how about The Left Hand of Darkness?",
            "that book is long, maybe a novella",
            "Murderbot novellas are short and fun",
            "I vote Murderbot",
            "can we meet at the cafe instead of the library?",
        ],
        "decided: book club reads All Systems Red, we meet at the cafe on the 12th",
        "does the cafe take reservations for eight?",
    ),
    (
        "raid",
        "raid night on thursday? we need a healer",
        [
            "I can heal if someone else tanks",
            "I'll tank, my gear is ready",
            "last raid boss wiped us at ten percent",
            "we should practice the second phase mechanics",
            "voice chat on the usual server",
            "start at eight please",
        ],
        "raid is set: thursday at eight, Mira heals, we practice phase two first",
        "who leads the raid calls this time?",
    ),
    (
        "potluck",
        "office potluck on friday, sign up for a dish",
        [
            "I'll bring a big pot of chili",
            "salad from me, vegan",
            "someone needs to bring plates and cups",
            "I can do dessert, maybe a cheesecake",
            "is the kitchen fridge free that day?",
            "lasagna from me",
        ],
        "agreed: potluck friday at one in the kitchen, plates and cups from the office budget",
        "who cleans up the kitchen after the potluck?",
    ),
    (
        "moving",
        "I'm moving apartments on the 30th, any helpers?",
        [
            "I can help carry boxes in the morning",
            "do you have a van booked?",
            "pizza for helpers is mandatory",
            "my car fits the small furniture",
            "how many floors, is there an elevator?",
            "bring tape, lots of tape",
        ],
        "decided: moving day starts at nine, van booked, pizza at noon for the helpers",
        "can someone lend a dolly for the washing machine?",
    ),
)


@dataclass(frozen=True)
class Said:
    message_id: int
    channel_id: int
    author_id: int
    author: str
    text: str
    at: datetime
    reply_to_id: int | None = None


@dataclass
class Planted:
    topic: str
    keys: tuple[int, int] = (0, 0)  # the opener's and the decision's ids
    started: datetime = DAY


@dataclass
class Day:
    said: list[Said] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)  # after the asker left

    @property
    def span(self) -> list[Said]:
        """What was said while the asker was away."""
        return [s for s in self.said if LEAVES < s.at < BACK]


def day(seed: int, filler: int) -> Day:
    """The day of `seed` with `filler` messages of filler (see the module docstring)."""
    rng = random.Random(seed)
    made = Day()
    ids = iter(range(1_190_000_000_100_000_000 + seed * 1_000_000, 1 << 62))
    names = {member_id: name for name, member_id in MEMBERS.items()}
    others = [m for m in MEMBERS.values() if m != ASKER]
    raw: list[tuple[datetime, int, int, str, int | None]] = []  # at, channel, author, text, index replied to
    topics = rng.sample(TOPICS, BEFORE + AFTER)
    for index, (topic, opener, replies, decision, question) in enumerate(topics):
        after = index >= BEFORE
        start = (
            LEAVES + timedelta(minutes=rng.randrange(10, 7 * 60))
            if after
            else DAY.replace(hour=7) + timedelta(minutes=rng.randrange(0, 100))
        )
        channel = rng.choice(list(CHANNELS.values()))
        people = rng.sample(others, rng.randint(2, 4))
        lines = [opener, *rng.sample(replies, rng.randint(3, len(replies))), decision]
        if rng.random() < 0.5:
            lines.append(question)
        at = start
        first = len(raw)
        for n, text in enumerate(lines):
            author = people[0] if n in (0, len(lines) - 1) and text != question else rng.choice(people)
            replied = first if n and rng.random() < 0.3 else None
            raw.append((at, channel, author, text, replied))
            at += timedelta(minutes=rng.randint(1, 5))
        if after:
            made.planted.append(Planted(topic, (first, first + len(lines) - 1 - (lines[-1] == question)), start))
    for _ in range(filler):
        at = DAY.replace(hour=7) + timedelta(seconds=rng.randrange(11 * 3600))
        kind = rng.choice(("reactions", "banter", "small_talk", "small_talk", "address"))
        slots = {slot: rng.choice(values) for slot, values in SLOTS.items()}
        text = rng.choice(FILLER[kind]).format(name=names[rng.choice(others)], **slots)
        raw.append((at, rng.choice(list(CHANNELS.values())), rng.choice(others), text, None))
    raw.append((LEAVES, CHANNELS["general"], ASKER, "morning all, heading to work, back tonight", None))
    raw.append((BACK - timedelta(minutes=1), CHANNELS["general"], ASKER, "hi all, I'm back", None))
    order = sorted(range(len(raw)), key=lambda i: raw[i][0])
    message_id = {i: next(ids) for i in order}
    for i in order:
        at, channel, author, text, replied = raw[i]
        reply = message_id[replied] if replied is not None else None
        made.said.append(Said(message_id[i], channel, author, names[author], text, at, reply))
    for planted in made.planted:
        planted.keys = (message_id[planted.keys[0]], message_id[planted.keys[1]])
    return made
