"""Fault states: one log line when a component goes down, at most one a minute while it stays down, one when it
is back — instead of a line (and a traceback) per failed attempt.

A `Fault` is one component of a process (storage, a model, the Discord gateway). Every place that talks to it
reports each failure (`failed`) and each success (`ok`); the fault turns those into transitions:

- down: a WARNING with the cause's type and message; the traceback only the first time this component sees a
  cause of that type (else at DEBUG), so a new kind of failure is diagnosable and a known one is one line;
- still down: a WARNING at most every `remind_seconds`, with how long and what is held meanwhile (`holds`);
- back: an INFO with how long it was down, who noticed, and what the sources say they replay (`ok(replayed=…)`).

Several sources can share a component (the ingest writer, the change feed, the summary scheduler all use
storage). A source that keeps retrying holds the component down until it succeeds itself (`hold=True`), so a
read that works while writes are still stuck does not announce "back"; a one-off (a reply) only reports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from db.ingest_rows import is_refusal

log = logging.getLogger(__name__)
REMIND_SECONDS = 60.0
DRIVERS = ("asyncpg", "aiosqlite", "sqlite3", "pysqlite3", "sqlalchemy")
CAUSE_CHARS = 200


def describe(cause: BaseException | str) -> str:
    """A failure as a person reads it: its type and the first line of its message, never a statement's parameters."""
    if isinstance(cause, str):
        return cause[:CAUSE_CHARS]
    shown = _driver_error(cause)
    text = str(shown).strip().splitlines()[0] if str(shown).strip() else ""
    name = type(shown).__name__
    return f"{name}: {text}"[:CAUSE_CHARS] if text else name


def storage_trouble(exc: BaseException) -> bool:
    """Whether `exc` says the database is away or stuck (not that it refused one thing): a storage fault."""
    if isinstance(exc, DBAPIError):
        return not isinstance(exc, (IntegrityError, DataError))
    if isinstance(exc, PoolTimeoutError):
        return True
    # The drivers raise some errors unwrapped (asyncpg's refused connect is a plain ConnectionRefusedError); the
    # model's transport raises the same classes, so where it was raised decides, not what it is.
    if is_refusal(exc) or not isinstance(exc, Exception):
        return False
    driver = type(exc).__module__.startswith(DRIVERS)
    return driver or (isinstance(exc, OSError | TimeoutError) and _raised_in_driver(exc))


def _raised_in_driver(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith(DRIVERS):
            return True
        tb = tb.tb_next
    return False


def cause_kind(cause: BaseException | str) -> str:
    """What makes a cause new: its type (the driver's, under SQLAlchemy's wrapper)."""
    if isinstance(cause, str):
        return cause.split(":", 1)[0]
    return type(_driver_error(cause)).__name__


def _driver_error(exc: BaseException) -> BaseException:
    """The driver's own error under SQLAlchemy's wrappers: SQLAlchemy's message carries the SQL and its parameters
    (what members wrote), and its asyncpg adapter names every error plain "Error"."""
    inner = getattr(exc, "orig", None)
    shown = inner if isinstance(inner, BaseException) else exc
    while type(shown).__module__.startswith("sqlalchemy") and isinstance(shown.__cause__, BaseException):
        shown = shown.__cause__
    return shown


@dataclass
class _Episode:
    """One stretch of being down."""

    since: float
    cause: str
    reminded: float
    failures: int = 0
    sources: dict[str, int] = field(default_factory=dict)  # who failed, how often
    holding: set[str] = field(default_factory=set)  # sources still failing that keep it down
    served: dict[str, int] = field(default_factory=dict)  # what was done without the component meanwhile
    replayed: dict[str, str] = field(default_factory=dict)  # per source: what it replays now it works again


class Fault:
    """One component's fault state: up, or down since a moment, with its first cause and what it holds."""

    def __init__(
        self,
        component: str,
        *,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
        remind_seconds: float = REMIND_SECONDS,
        down_word: str = "down",
        back_word: str = "back",
        still_word: str | None = None,
    ) -> None:
        self.component = component
        self._log = logger or log
        self._clock = clock
        self._remind = remind_seconds
        self._down_word, self._back_word = down_word, back_word
        self._still_word = still_word or f"still {down_word}"
        self._episode: _Episode | None = None
        self._seen: set[str] = set()  # cause kinds whose traceback was shown once
        self._holds: dict[str, Callable[[], int]] = {}
        self.episodes = 0  # how many times it went down (tests, stats)

    @property
    def down(self) -> bool:
        """Whether the component is down now."""
        return self._episode is not None

    @property
    def down_for(self) -> float:
        """Seconds since it went down (0 when up)."""
        return self._clock() - self._episode.since if self._episode is not None else 0.0

    def holds(self, what: str, count: Callable[[], int]) -> None:
        """Name something kept back while down (e.g. "messages held" → the queue's length), for the reminders."""
        self._holds[what] = count

    def failed(self, cause: BaseException | str, *, source: str = "", hold: bool = True) -> None:
        """A call to the component failed: the first failure says "down", later ones at most a reminder a minute."""
        now = self._clock()
        episode = self._episode
        if episode is None:
            episode = self._episode = _Episode(since=now, cause=describe(cause), reminded=now)
            self.episodes += 1
            self._say_down(cause, source)
        elif now - episode.reminded >= self._remind:
            episode.reminded = now
            self._log.warning(
                "%s %s for %.0f s: %s%s (last: %s)",
                self.component,
                self._still_word,
                now - episode.since,
                _counts(self._held(), {"failed attempts": episode.failures + 1}),
                _served(episode.served),
                describe(cause),
            )
        self._trace_quietly(cause)
        episode.failures += 1
        if source:
            episode.sources[source] = episode.sources.get(source, 0) + 1
            if hold:
                episode.holding.add(source)

    def served(self, what: str) -> None:
        """Something was done without the component while it is down (e.g. "replies from caches"): counted."""
        if self._episode is not None:
            self._episode.served[what] = self._episode.served.get(what, 0) + 1

    def ok(self, source: str = "", *, replayed: str = "") -> None:
        """A call worked: "back" once every source that holds the component down has worked again."""
        episode = self._episode
        if episode is None:  # the hot path: one attribute read
            return
        episode.holding.discard(source)
        if replayed:  # said with "back", which may wait for another source
            episode.replayed[source] = replayed
        if episode.holding:
            return
        self._episode = None
        after = ", ".join(f"{name} {count:,}" for name, count in sorted(episode.sources.items()))
        self._log.info(
            "%s %s after %.0f s (%s failed attempts%s)%s%s",
            self.component,
            self._back_word,
            self._clock() - episode.since,
            f"{episode.failures:,}",
            f": {after}" if after else "",
            _served(episode.served),
            "".join(f"; {said}" for said in episode.replayed.values()),
        )

    def _say_down(self, cause: BaseException | str, source: str) -> None:
        kind = cause_kind(cause)
        # The driver's error, not SQLAlchemy's wrapper: its message and traceback carry no statement parameters.
        first = _driver_error(cause) if isinstance(cause, BaseException) and kind not in self._seen else None
        self._seen.add(kind)
        held = {what: count for what, count in self._held().items() if count}
        self._log.warning(
            "%s %s%s: %s%s",
            self.component,
            self._down_word,
            f" ({source})" if source else "",
            describe(cause),
            f"; {_counts(held)}" if held else "",  # a write stuck behind a lock: how much waits behind it
            exc_info=first,
        )

    def _trace_quietly(self, cause: BaseException | str) -> None:
        """Every traceback stays available at DEBUG; WARNING shows one per new kind of cause."""
        if isinstance(cause, BaseException) and self._log.isEnabledFor(logging.DEBUG):
            self._log.debug("%s failure: %s", self.component, describe(cause), exc_info=cause)

    def _held(self) -> dict[str, int]:
        held: dict[str, int] = {}
        for what, count in self._holds.items():
            try:
                held[what] = count()
            except Exception:  # a reminder never fails because a count could not be taken
                log.debug("counting %s failed", what, exc_info=True)
        return held


def _counts(*parts: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {what}" for part in parts for what, count in part.items())


def _served(served: dict[str, int]) -> str:
    return "".join(f", {count:,} {what}" for what, count in served.items())
