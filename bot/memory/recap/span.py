"""Reading a request for a recap: which channel (or the whole server), which span of time, about what.

"catch me up on <#123> since Friday" → channel 123, from the start of last Friday until now. "what happened here
this week?" → the channel asked in, from Monday. "what did I miss?" names neither: the server, and the span is
left to the default (since the asker last spoke, bot/memory/recap/face.py). "what did we decide about the
tournament?" adds a topic: only the threads about it are told. Times are read in the guild's zone; a span
that names a day ("yesterday", "on Friday") ends with it, a "since …" or "this week" goes on until now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.memory.recall.question import named_day, words_of

CHANNEL = re.compile(r"<#(\d{15,20})>")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = "|".join(WEEKDAYS)
_WEEKDAY_SHORT = _WEEKDAY + "|" + "|".join(d[:3] for d in WEEKDAYS)  # "sat", "sun", "wed" alone are words
_HERE = re.compile(r"\b(?:here|in\s+here|this\s+channel|this\s+thread)\b", re.I)
_NUMBER = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|couple(?:\s+of)?|few)"
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_COUNTS |= {"eight": 8, "nine": 9, "ten": 10, "twelve": 12, "couple": 2, "couple of": 2, "few": 3}
_UNITS = {"m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400, "w": 604800}
_UNITS |= {"week": 604800}
_LAST_N = re.compile(
    rf"\b(?:(?:in|over|for|during)\s+)?(?:the\s+)?(?:last|past)\s+{_NUMBER}\s+(minute|hour|day|week)s?\b"
    rf"|\bsince\s+{_NUMBER}\s+(minute|hour|day|week)s?\s+ago\b"
    r"|^(?:since\s+)?(\d+)\s*(m|min|minute|h|hour|d|day|w|week)s?$"
)
_SINCE_WEEKDAY = re.compile(rf"\bsince\s+(?:last\s+)?({_WEEKDAY_SHORT})\b")
_ON_WEEKDAY = re.compile(rf"\b(?:on\s+|last\s+)?({_WEEKDAY})\b")
_SINCE_CLOCK = re.compile(r"\bsince\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b")
_SINCE_DATE = re.compile(r"\bsince\s+(?:the\s+)?(\S.*)$")
# Phrases and where they begin and end: (days back to the start of the first day, days back to the end's day
# or None for "until now", the hour of day the start is at).
_PHRASES: tuple[tuple[str, int, int | None, int], ...] = (
    (r"since\s+last\s+night", 1, None, 18),
    (r"since\s+yesterday", 1, None, 0),
    (r"since\s+(?:this\s+)?morning|this\s+morning", 0, None, 0),
    (r"today|so\s+far", 0, None, 0),
    (r"overnight|last\s+night", 1, 0, 18),
    (r"yesterday", 1, 0, 0),
)
# Words of the request itself, never a topic: what it asks for, where and when.
_NOT_TOPIC = {
    *WEEKDAYS,
    *(d[:3] for d in WEEKDAYS),
    "since",
    "happened",
    "happening",
    "decide",
    "decided",
    "decision",
    "decisions",
    "agree",
    "agreed",
    "miss",
    "missed",
    "catch",
    "recap",
    "summary",
    "summarise",
    "summarize",
    "channel",
    "server",
    "thread",
    "everyone",
    "everywhere",
    "hours",
    "hour",
    "morning",
    "night",
    "weekend",
    "past",
    "minutes",
}
_TOPIC = re.compile(r"\b(?:about|regarding|concerning|with|on)\s+(?P<topic>.+)$", re.I | re.S)


@dataclass(frozen=True, slots=True)
class Reading:
    """What a recap request asks: about which channel (None: the server), a span it names (None: the default),
    how to say that span ("since Friday"), and the words of a topic (empty: everything)."""

    channel_id: int | None
    span: tuple[datetime, datetime] | None = None
    label: str = ""
    topic: tuple[str, ...] = ()


def read(text: str, *, here: int | None, now: datetime, zone: str) -> Reading:
    """A recap request read: a channel mention wins over "here"; otherwise the whole server."""
    channel: int | None = None
    if found := CHANNEL.search(text):
        channel = int(found.group(1))
    elif here is not None and _HERE.search(text):
        channel = here
    plain = " ".join(CHANNEL.sub(" ", text).split())
    named = named_span(plain, now, zone)
    if named is None:
        return Reading(channel, topic=topic(plain))
    return Reading(channel, (named[0], named[1]), named[2], topic(plain))


def topic(text: str) -> tuple[str, ...]:
    """The content words of what a request asks about ("… about the tournament bracket?"), time words aside."""
    match = _TOPIC.search(text)
    if match is None:
        return ()
    return tuple(w for w in words_of(match.group("topic")) if w not in _NOT_TOPIC and not w.isdigit())


def named_span(text: str, now: datetime, zone: str) -> tuple[datetime, datetime, str] | None:
    """The span a request names (start, end, how to say it), or None; the start is never after `now`."""
    tz = ZoneInfo(zone)
    local = now.astimezone(tz)
    low = " ".join(text.lower().split()).rstrip("?!. ")
    found = _relative(low, now) or _since(low, local) or _days(low, local)
    if found is None:
        return None
    start, end, label = found
    start, end = min(start, now), min(end, now)
    return (start, end, label) if start < end else None


def _relative(low: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    """ "the last 3 hours", "past two days", "since 2 days ago", and a slash command's "3d", "12h"."""
    match = _LAST_N.search(low)
    if match is None:
        return None
    groups = [g for g in match.groups() if g is not None]
    amount, unit = groups[0], groups[1]
    n = int(amount) if amount.isdigit() else _COUNTS[amount]
    seconds = _UNITS[unit] * n
    plural = "s" if n != 1 else ""
    name = {60: "minute", 3600: "hour", 86400: "day", 604800: "week"}[_UNITS[unit]]
    return now - timedelta(seconds=seconds), now, f"in the last {n} {name}{plural}"


def _since(low: str, local: datetime) -> tuple[datetime, datetime, str] | None:
    """ "since Friday", "since 14:00", "since 2pm", "since November 3", "since yesterday", "this week"."""
    today = local.date()
    if match := _SINCE_WEEKDAY.search(low):
        weekday = _last_weekday(match.group(1), today)
        return _start(weekday, local), local, f"since {weekday:%A}"
    if match := _SINCE_CLOCK.search(low):
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if match.group(3) == "pm" and hour < 12:
            hour += 12
        if match.group(3) == "am" and hour == 12:
            hour = 0
        if hour < 24 and minute < 60 and (match.group(2) or match.group(3)):
            start = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
            start = start if start <= local else start - timedelta(days=1)
            return start, local, f"since {start:%H:%M}"
    for pattern, back, until, hour in _PHRASES:
        if re.search(rf"\b(?:{pattern})\b", low):
            start = datetime.combine(today - timedelta(days=back), time(hour), tzinfo=local.tzinfo)
            end = local if until is None else _start(today - timedelta(days=until), local)
            return start, end, re.sub(r"\s+", " ", re.search(rf"\b(?:{pattern})\b", low).group(0))  # type: ignore[union-attr]
    if (match := _SINCE_DATE.search(low)) and (day := named_day(match.group(1), today)) is not None:
        return _start(day, local), local, f"since {day:%A %Y-%m-%d}"
    return None


def _days(low: str, local: datetime) -> tuple[datetime, datetime, str] | None:
    """Calendar spans: this week, last week, the weekend, this month, a weekday or a date."""
    today = local.date()
    monday = today - timedelta(days=today.weekday())
    if re.search(r"\bthis\s+week\b", low):
        return _start(monday, local), local, "this week"
    if re.search(r"\blast\s+week\b", low):
        return _start(monday - timedelta(days=7), local), _start(monday, local), "last week"
    if re.search(r"\b(?:this|the|over\s+the|last)\s+weekend\b", low):
        saturday = monday - timedelta(days=2) if today.weekday() < 5 else monday + timedelta(days=5)
        return _start(saturday, local), min(local, _start(saturday + timedelta(days=2), local)), "over the weekend"
    if re.search(r"\bthis\s+month\b", low):
        return _start(today.replace(day=1), local), local, "this month"
    return _one_day(low, local)


def _one_day(low: str, local: datetime) -> tuple[datetime, datetime, str] | None:
    """A weekday ("on Tuesday", "last Friday") or a date the request names: that day alone."""
    today = local.date()
    if match := _ON_WEEKDAY.search(low):
        day = _last_weekday(match.group(1), today, today_counts=True)
        return _start(day, local), _start(day + timedelta(days=1), local), f"on {day:%A}"
    if (named := named_day(low, today)) is not None:
        return _start(named, local), _start(named + timedelta(days=1), local), f"on {named:%A %Y-%m-%d}"
    return None


def _last_weekday(name: str, today: date, *, today_counts: bool = False) -> date:
    """The last such weekday before today ("since Friday" said on a Friday means a week ago), or today itself."""
    wanted = next(i for i, d in enumerate(WEEKDAYS) if d.startswith(name[:3]))
    back = (today.weekday() - wanted) % 7
    return today - timedelta(days=back if back or today_counts else 7)


def _start(day: date, local: datetime) -> datetime:
    return datetime.combine(day, time(0), tzinfo=local.tzinfo)
