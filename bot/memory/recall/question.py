"""Reading a question about the past: its content words, the members it names, the time it points at.

"What did Melanie paint last May?" → words ["paint"], members {Melanie's id: {"melanie"}}, window May 1–31 of
the last May that is over. A member's name says *who*, not *what*: it leaves the words searched for and
becomes a preference for that member's own messages and messages about them (not ones merely addressed to
them: "thanks Melanie!"). Time words narrow nothing on their own; they prefer messages inside the window.
An explicit date, month or year wins over any other time word ("recently in May 2022" is May 2022). "Recently",
"lately", "these days" name no window: they only mark the question `recent`, which recall turns into a gentle
preference for the recent part of the guild's own stored span (search.py), never as strong as a name.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.text import MENTION, STOPWORDS, WORD

MAX_TERMS = 8
MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
MONTHS |= {m[:3]: i for m, i in list(MONTHS.items())} | {"sept": 9}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple": 2,
    "few": 3,
}
_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple|few)"
    r"(?:\s+of)?\s+(day|week|month|year)s?\s+ago\b"
)
_MONTHS = "|".join(sorted(MONTHS, key=len, reverse=True))
_MONTH = re.compile(rf"\b(?:(last|this|in|during|back in|early|late|mid)\s+)?({_MONTHS})\b(?:\s+(\d{{4}}))?")
_ISO_DATE = re.compile(r"\b((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})\b")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_MONTH_DAY = re.compile(rf"\b({_MONTHS})\.?\s+{_DAY}\b(?!:)(?:,?\s+((?:19|20)\d{{2}}))?")
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_MONTHS})\b(?:,?\s+((?:19|20)\d{{2}}))?")
_YEAR = re.compile(r"\b(?:in|during|back in)\s+((?:19|20)\d{2})\b")
_RELATIVE = {
    "yesterday": (2, 0),
    "last week": (14, 6),
    "this week": (7, 0),
    "last month": (62, 27),
    "this month": (31, 0),
    "last year": (730, 330),
}
_RECENT = re.compile(r"\b(?:recently|lately|these days|nowadays|of late)\b")
_RECENT_WORDS = {"recently", "lately", "nowadays"}  # say when, not what: never words to search for
_ADDRESS = r"(?:^|[.!?]\s+)(?:hey|hi|hello|thanks|thank you|thx|ty|ok|okay|yo|sorry|congrats|love you|welcome)?,?\s*"


@dataclass(frozen=True, slots=True)
class Question:
    """What a question asks: words to search for, members it is about, a time it points at."""

    text: str
    terms: list[str]
    members: dict[int, set[str]] = field(default_factory=dict)
    window: tuple[datetime, datetime] | None = None
    recent: bool = False  # "recently", "lately", "these days" with no explicit time


# The words a question opens with (bot/reply/routing.py's `asks` reads them too).
QUESTION_WORDS = (
    "who|whom|whose|what|when|where|why|how|which|did|does|do|was|were|is|are|has|have|had|can|could|would|will"
)
_ASKING = re.compile(rf"^(?:{QUESTION_WORDS}|remind|tell me|remember|recall)\b", re.I)


def asks_after(question: Question) -> bool | None:
    """Whether a message points at something memory may hold: True for a member or a time it names, or a question
    or request with words to search ("remind me which book…"); False with nothing to search for ("how are you?",
    "lol"); None for a remark, which only what it finds can justify (see Recollection.recollect)."""
    if question.members or question.window is not None or question.recent:
        return True
    if not question.terms:
        return False
    text = question.text.strip()
    if text.endswith("?") or _ASKING.match(text):
        return True
    return None if len(question.terms) > 1 else False


_QUESTION_WORD = r"(?:who|whom|whose|what|when|where|why|how|which|did|does|do|is|are|was|were|has|have|had|can|could)"
# Where one question ends and another begins: "…? …", or "…, and where …" / "…; also did …".
_PARTS = re.compile(rf"\?\s+(?=\S)|\s*[,;]?\s+(?:and|also|plus|&)\s+(?={_QUESTION_WORD}\b)", re.I)
MAX_PARTS = 3


def parts_of(text: str) -> list[str]:
    """The questions a message asks, when it asks several ("what did Yuki binge last June, and is Rui into
    climbing?"), else [text]. Every part needs a word to search for (else it is one question: "…, and where is
    it?")."""
    pieces = [p.strip() for p in _PARTS.split(text) if p.strip()]
    if len(pieces) < 2 or not all(words_of(MENTION.sub(" ", p)) for p in pieces):
        return [text]
    return pieces[:MAX_PARTS]


def words_of(text: str, *, drop: set[str] | None = None) -> list[str]:
    """Content words of a text, lowercased, de-duplicated, in order; at most MAX_TERMS."""
    seen: list[str] = []
    for word in WORD.findall(text.lower()):
        if len(word) > 1 and word not in STOPWORDS and word not in (drop or set()) and word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]


def _month_window(month: int, year: int | None, today: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
    if year is None:  # the last such month that has begun
        year = today.year if month <= today.month else today.year - 1
    start = datetime(year, month, 1, tzinfo=zone)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=zone)
    return start, end


def time_window(text: str, now: datetime, zone: str = "UTC") -> tuple[datetime, datetime] | None:
    """The stretch of time a question points at, widened a little (people round), or None.

    What the question states outright (a date, a month, a year) wins over what it says relative to now (three
    weeks ago, last month): "what did she say recently in May 2022?" asks about May 2022.
    """
    tz = ZoneInfo(zone)
    low = text.lower()
    if explicit := _explicit_window(low, now.astimezone(tz).date(), tz):
        return explicit
    if match := _AGO.search(low):
        n = int(match.group(1)) if match.group(1).isdigit() else _NUMBERS[match.group(1)]
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[match.group(2)] * n
        slack = max(1, days // 3)
        return now - timedelta(days=days + slack), now - timedelta(days=max(0, days - slack))
    for phrase, (back, until) in _RELATIVE.items():
        if re.search(rf"\b{phrase}\b", low):
            return now - timedelta(days=back), now - timedelta(days=until)
    return None


def _explicit_window(low: str, today: date, tz: ZoneInfo) -> tuple[datetime, datetime] | None:
    """A date (a day either side: people round), a month or a year the question names, or None."""
    if day := named_day(low, today):
        start = datetime(day.year, day.month, day.day, tzinfo=tz)
        return start - timedelta(days=1), start + timedelta(days=2)
    if match := _MONTH.search(low):
        word = match.group(2)
        if word != "may" or match.group(1) or match.group(3):  # "may" alone is mostly the verb
            return _month_window(MONTHS[word], int(match.group(3)) if match.group(3) else None, today, tz)
    if match := _YEAR.search(low):
        year = int(match.group(1))
        return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)
    return None


def named_day(low: str, today: date) -> date | None:
    """ "2022-05-07", "May 7th, 2022", "7 May": the day named (without a year, the last such day begun)."""
    if match := _ISO_DATE.search(low):
        year, month, day = (int(g) for g in match.groups())
    elif match := _MONTH_DAY.search(low):
        month, day, year = MONTHS[match.group(1)], int(match.group(2)), int(match.group(3) or 0)
    elif match := _DAY_MONTH.search(low):
        day, month, year = int(match.group(1)), MONTHS[match.group(2)], int(match.group(3) or 0)
    else:
        return None
    try:
        named = date(year or today.year, month, day)
        return named if year or named <= today else date(today.year - 1, month, day)
    except ValueError:  # "May 42", "February 30": no such day
        return None


def recent(text: str) -> bool:
    """Whether the question asks about lately ("recently", "these days") without naming a time of its own."""
    return bool(_RECENT.search(text.lower()))


def addressed_only(text: str, name: str) -> bool:
    """Whether `name` appears in `text` only as the person spoken to ("thanks Mel!", "Mel, you around?")."""
    low, n = text.lower(), re.escape(name.lower())
    mentions = [m.start() for m in re.finditer(rf"\b{n}\b", low)]
    if not mentions:
        return False
    vocative = re.compile(rf"{_ADDRESS}@?{n}\b\s*[,!?:]|[,!]\s*@?{n}\s*[!?.]*\s*$|^@?{n}\s*[,:!]")
    spoken_to = {m.start() + m.group(0).lower().find(name.lower()) for m in vocative.finditer(low)}
    return all(position in spoken_to for position in mentions)


async def read(
    text: str, *, now: datetime, zone: str, resolve: Callable[[list[str]], Awaitable[dict[str, list[int]]]]
) -> Question:
    """The question in `text`: members named (by mention, or by a name that resolves to one member).

    `resolve`: the members each of some words names (all the words at once: one lookup per question).
    """
    members: dict[int, set[str]] = {int(m): set() for m in MENTION.findall(text)}
    plain = MENTION.sub(" ", text)
    words = words_of(plain)
    resolved = await resolve(words) if words else {}
    for word in words:
        found = resolved.get(word, [])
        if len(found) == 1:
            members.setdefault(found[0], set()).add(word)
    named = {w for words in members.values() for w in words}
    window = time_window(plain, now, zone)
    terms = words_of(plain, drop=named | _RECENT_WORDS)
    return Question(plain, terms, members, window, recent=window is None and recent(plain))
