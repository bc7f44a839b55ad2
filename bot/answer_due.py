"""How long a model call may still take: a reply under a deadline retries only while a retry can land in time.

`ReplyDeadline` sets the moment its answer is due (`answer_by`) in the reply's own task context; the resilience
layer (bot/llm/resilience.py) retries a 429, a 500 or a time-out only when the wait and a try (LAST_TRY_SECONDS)
fit in half the time left — a reply's model calls come one after another (route, then chat or phrasing), so one
call's retries may not eat the next one's time — and otherwise fails at once: the reply falls back offline now
instead of sleeping into the deadline (a 429's retry delay of 20 s never fits).
Background work started from a reply (single flight, `spawn`) runs `detached`: it keeps its full retries.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

LAST_TRY_SECONDS = 1.0  # a retry must leave at least this for the try itself before the answer is due
_DUE: contextvars.ContextVar[float | None] = contextvars.ContextVar("elefant_answer_due", default=None)


@contextlib.contextmanager
def answer_by(seconds: float) -> Iterator[None]:
    """Model calls in this context (and tasks it starts, unless detached) are due within `seconds`."""
    token = _DUE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DUE.reset(token)


def time_left() -> float | None:
    """Seconds until the answer under way is due (negative: past it), or None outside a reply."""
    due = _DUE.get()
    return None if due is None else due - time.monotonic()


def no_time_for(wait: float) -> bool:
    """Whether a retry after `wait` seconds would take more than half the time left before the answer is due."""
    left = time_left()
    return left is not None and wait + LAST_TRY_SECONDS > left / 2


def detached() -> contextvars.Context:
    """The current context without a due time: for background work a reply starts but does not wait for."""
    context = contextvars.copy_context()
    context.run(_DUE.set, None)
    return context
