"""A circuit breaker with an injectable clock: skip a failing model for a cool-down, then probe once.

Each transition is logged once through a fault state (bot/faults.py), with the cause of the failure that caused
it (status and message), so an outage reads as "circuit breaker open: 404 NOT_FOUND …", at most one "still open"
a minute, and "circuit breaker closed" — instead of one line per failed call or probe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum

from bot.faults import Fault

log = logging.getLogger(__name__)


class State(StrEnum):
    """Closed: calls go through. Open: calls are refused. Half-open: one probe call is let through."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class CircuitBreaker:
    """Opens after `failures` consecutive failures; after `cooldown` seconds lets one probe through."""

    def __init__(
        self,
        *,
        failures: int,
        cooldown: float,
        clock: Callable[[], float] = time.monotonic,
        name: str = "the model",
    ) -> None:
        self._threshold = failures
        self._cooldown = cooldown
        self._clock = clock
        self.name = name
        self._consecutive = 0
        self._opened_at: float | None = None
        self._probing = False
        self.last_cause = ""  # the newest failure, as a person would read it
        self._fault = Fault(
            name,
            logger=log,
            clock=clock,
            down_word="circuit breaker open",
            back_word="circuit breaker closed",
            still_word="circuit breaker still open",
        )

    @property
    def state(self) -> State:
        """The state now (an open breaker turns half-open once the cool-down has passed)."""
        if self._opened_at is None:
            return State.CLOSED
        if self._clock() - self._opened_at >= self._cooldown:
            return State.HALF_OPEN
        return State.OPEN

    def allow(self) -> bool:
        """Whether a call may go to the model now; in half-open state only one probe at a time."""
        state = self.state
        if state is State.CLOSED:
            return True
        if state is State.HALF_OPEN and not self._probing:
            self._probing = True
            log.debug("%s: cool-down over; sending one probe request", self.name)
            return True
        return False

    def success(self) -> None:
        """A call worked: close."""
        self._fault.ok()
        self._consecutive = 0
        self._opened_at = None
        self._probing = False

    def failure(self, cause: str = "") -> None:
        """A call failed (after its retries): count it; a failed probe re-opens for a full cool-down."""
        self._consecutive += 1
        self.last_cause = cause or self.last_cause
        if self._probing:  # still failing: a reminder at most once a minute
            self._opened_at = self._clock()
            self._fault.failed(cause or "unknown")
        elif self._opened_at is None and self._consecutive >= self._threshold:
            self._opened_at = self._clock()
            self._fault.failed(
                f"{cause or 'unknown'} ({self._consecutive} failures in a row; offline answers for "
                f"{self._cooldown:.0f} s, then one probe)"
            )
        else:
            log.debug("%s failed (%s); %d in a row", self.name, cause or "unknown", self._consecutive)
        self._probing = False
