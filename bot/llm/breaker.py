"""A circuit breaker with an injectable clock: skip a failing model for a cool-down, then probe once.

Each transition is logged once, with the cause of the failure that caused it (status and message), so an
outage reads as "opened: 404 NOT_FOUND …" and "closed again" instead of one line per failed call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum

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
            log.info("%s: cool-down over; sending one probe request", self.name)
            return True
        return False

    def success(self) -> None:
        """A call worked: close."""
        if self._opened_at is not None:
            log.warning("%s answers again; its circuit breaker is closed", self.name)
        self._consecutive = 0
        self._opened_at = None
        self._probing = False

    def failure(self, cause: str = "") -> None:
        """A call failed (after its retries): count it; a failed probe re-opens for a full cool-down."""
        self._consecutive += 1
        self.last_cause = cause or self.last_cause
        if self._probing:
            self._opened_at = self._clock()
            log.warning(
                "%s still fails (%s); skipping it for another %.0f s", self.name, cause or "unknown", self._cooldown
            )
        elif self._opened_at is None and self._consecutive >= self._threshold:
            self._opened_at = self._clock()
            log.warning(
                "%s failed %d times in a row (last: %s); skipping it for %.0f s (offline answers meanwhile)",
                self.name,
                self._consecutive,
                cause or "unknown",
                self._cooldown,
            )
        else:
            log.debug("%s failed (%s); %d in a row", self.name, cause or "unknown", self._consecutive)
        self._probing = False
