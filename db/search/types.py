"""What a search is asked (`Search`) and the rows it gives back."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from db.scope import Scope

FAR_PAST = datetime(1970, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Search:
    """One message search: its words, whose messages (None: anyone's), within [since, until) (None: no bound),
    decayed how, read from which channel (the read scope), and how many."""

    guild_id: int
    terms: tuple[str, ...]
    now: datetime
    here: int | None
    limit: int
    user_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    half_life_days: float = 0.0

    @property
    def bounded(self) -> bool:
        """Whether the search has a period."""
        return self.since is not None or self.until is not None

    def scope(self) -> Scope:
        """What a reader in `here` may see."""
        return Scope(self.guild_id, self.here)


@dataclass(frozen=True, slots=True)
class Turn:
    """A message as recall shows it, with what it replies to."""

    message_id: int
    channel_id: int
    user_id: int
    text: str
    at: datetime
    reply_to_id: int | None


@dataclass(frozen=True, slots=True)
class MessageRow:
    message_id: int
    channel_id: int
    user_id: int
    text: str
    at: datetime
    relevance: float
    score: float
    reply_to_id: int | None = None

    def turn(self) -> Turn:
        """The message as recall shows it."""
        return Turn(self.message_id, self.channel_id, self.user_id, self.text, self.at, self.reply_to_id)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    user_id: int
    day: date
    text: str
    relevance: float
    score: float


def decay_rate(half_life_days: float) -> float:
    """Per-day exponent rate: weight = exp(-rate × age_days) halves every `half_life_days` (0: no decay)."""
    return math.log(2) / half_life_days if half_life_days > 0 else 0.0


def turns_of(rows: Iterable[Any]) -> list[Turn]:
    """Turns from rows of TURN_COLUMNS."""
    return [Turn(m, c, u, body, ts, r) for m, c, u, body, ts, r in rows]


TURN_COLUMNS = "c.message_id, c.channel_id, c.user_id, c.message_text, c.timestamp, c.reply_to_id"
