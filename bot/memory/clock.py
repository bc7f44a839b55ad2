"""Injectable time: everything that depends on "now" asks a Clock, so tests move time instead of sleeping."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

# Days 2–7 (yesterday and the five days before it) form a member's "last week" history; db/deletion.py
# repeats the span as HISTORY_DAYS because db/ never imports from bot/.
HISTORY_SPAN = 6


def history_days(today: date) -> list[date]:
    """Days 2–7 before `today`, oldest first: what a member's historical summary covers."""
    return [today - timedelta(days=k) for k in range(HISTORY_SPAN, 0, -1)]


class Clock:
    """The real clock (aware UTC)."""

    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """Seconds for cache expiry (cachetools' `timer`)."""
        return self.now().timestamp()

    def horizon(self) -> datetime | None:
        """The newest moment memory may show: None here, where everything stored is the past."""
        return None


class FakeClock(Clock):
    """A clock that only moves when told to."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> None:
        """Move time forward, e.g. `advance(minutes=61)`."""
        self._now += timedelta(**delta)


class ReplayClock(FakeClock):
    """A past moment replayed (`python -m bot recall --at`, `prompt --at`): what was stored after it, messages,
    summaries and facts revisions alike, is not said yet, so memory shows none of it."""

    def horizon(self) -> datetime | None:
        return self.now()


def local_day(moment: datetime, zone: str) -> date:
    """The calendar day `moment` falls on in `zone`."""
    return moment.astimezone(ZoneInfo(zone)).date()


def day_bounds(day: date, zone: str) -> tuple[datetime, datetime]:
    """The UTC start (inclusive) and end (exclusive) of a calendar day in `zone`."""
    tz = ZoneInfo(zone)
    start = datetime(day.year, day.month, day.day, tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)
