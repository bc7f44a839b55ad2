"""A circuit breaker with an injectable clock: skip a failing model for a cool-down, then probe once."""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum


class State(StrEnum):
    """Closed: calls go through. Open: calls are refused. Half-open: one probe call is let through."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class CircuitBreaker:
    """Opens after `failures` consecutive failures; after `cooldown` seconds lets one probe through."""

    def __init__(self, *, failures: int, cooldown: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = failures
        self._cooldown = cooldown
        self._clock = clock
        self._consecutive = 0
        self._opened_at: float | None = None
        self._probing = False

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
            return True
        return False

    def success(self) -> None:
        """A call worked: close."""
        self._consecutive = 0
        self._opened_at = None
        self._probing = False

    def failure(self) -> None:
        """A call failed (after its retries): count it; a failed probe re-opens for a full cool-down."""
        self._consecutive += 1
        if self._probing or self._consecutive >= self._threshold:
            self._opened_at = self._clock()
        self._probing = False
