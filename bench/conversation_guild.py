"""The recall benchmark guild's fixed shape (members, channels, its clock and activity) and its records.

Shared by the stories that plant evidence (`bench.conversation_planting`), the filler between them
(`bench.conversation_filler`) and the generated guild (`bench.conversations`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import snowballstemmer

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
START = NOW - timedelta(days=450)
GUILD_ID = 1_180_000_000_000_000_001
GUILD_NAME = "the herd"
DISCORD_EPOCH_MS = 1_420_070_400_000
MIN_AGE_DAYS, MAX_AGE_DAYS = 30, 365

NAMES = (
    "Ana Mira Jon Melanie Tomasz Priya Kenji Sofia Dev Lars Aisha Rui Hannah Omar Beto Yuki".split()  # display names
)
CHANNEL_WEIGHTS = {
    "general": 30,
    "off-topic": 20,
    "gaming": 12,
    "food": 8,
    "pets": 6,
    "travel": 6,
    "music": 6,
    "books": 5,
    "fitness": 7,
}
# Share of the day's messages per UTC hour: quiet nights, busy evenings.
HOUR_WEIGHTS = (3, 2, 1, 1, 1, 1, 2, 4, 6, 7, 7, 8, 9, 9, 8, 8, 9, 11, 13, 14, 14, 12, 9, 5)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn d did didn do does doesn doing don down during each few for from
    further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn
    it its itself just ll m me more most mustn my myself no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was wasn we were weren
    what when where which while who whom why will with won would wouldn y you your yours yourself yourselves
    anyone anything someone something ever also us let get got""".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_STEMMER = snowballstemmer.stemmer("english")


def content_words(text: str) -> set[str]:
    """The stemmed content words of `text` (lower case, stopwords removed, Snowball English stems)."""
    return set(_STEMMER.stemWords([w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]))


@dataclass(frozen=True)
class Member:
    id: int
    name: str  # display name (the nickname in exports)
    username: str


@dataclass(frozen=True)
class Channel:
    id: int
    name: str


@dataclass(frozen=True)
class Message:
    message_id: int
    channel_id: int
    author_id: int
    text: str
    timestamp: datetime
    reply_to_id: int | None = None


@dataclass(frozen=True)
class Question:
    text: str
    asker_id: int
    asked_at: datetime
    type: str
    evidence_ids: tuple[int, ...]
    answer: str
    story: str  # kind key and subject, e.g. "camping/Jon"


def snowflake(ts: datetime, worker: int = 0, increment: int = 0) -> int:
    """A Discord-style id: milliseconds since the Discord epoch, then worker and increment bits."""
    ms = int(ts.timestamp() * 1000) - DISCORD_EPOCH_MS
    return (ms << 22) | (worker << 17) | increment


def at_hour(day: datetime, rng: random.Random) -> datetime:
    """A time on `day`, at an hour drawn from the guild's daily rhythm."""
    hour = rng.choices(range(24), HOUR_WEIGHTS)[0]
    return day.replace(hour=hour, minute=rng.randrange(60), second=rng.randrange(60), microsecond=0)


def day_at_age(age_days: float) -> datetime:
    """Midnight of the day `age_days` before NOW."""
    return (NOW - timedelta(days=age_days)).replace(hour=0, minute=0, second=0, microsecond=0)


MONTHS = "january february march april may june july august september october november december".split()
