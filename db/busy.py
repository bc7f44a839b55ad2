"""A busy database, not an absent one: a deadlock, a serialization failure or a lock wait that ran out.

PostgreSQL rolls such a transaction back (SQLSTATE 40P01 deadlock, 40001 serialization failure, 55P03 lock not
available: `lock_timeout`, db/engine.py), and running it again is safe and usually works at once: it says nothing
about storage being down, and nothing about the rows it wrote. Writers retry it (`retry_busy`, and the ingest
committer) a bounded number of times before it counts as a storage fault.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

T = TypeVar("T")
BUSY_STATES = frozenset({"40P01", "40001", "55P03"})
ATTEMPTS = 6  # with lock_timeout at 2 s, six tries outlast a frozen process's session (idle timeout, db/engine.py)


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` (the driver's error, or SQLAlchemy's around it) is a deadlock, a serialization failure or a
    lock wait that ran out: the transaction was rolled back and may simply run again."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "sqlstate", None) in BUSY_STATES:
            return True
        inner = getattr(current, "orig", None)
        current = inner if isinstance(inner, BaseException) else current.__cause__
    return False


async def retry_busy(work: Callable[[], Awaitable[T]], *, attempts: int | None = None) -> T:
    """Run `work` (one whole transaction), again while the database answers busy, at most `attempts` times; the
    last busy error is raised as it was (a storage fault to the caller). Anything else is raised at once.

    `attempts` defaults to ATTEMPTS, read at the call."""
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_busy),
        wait=wait_exponential_jitter(initial=0.05, max=2.0),
        stop=stop_after_attempt(attempts or ATTEMPTS),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await work()
    raise AssertionError("unreachable: tenacity returns or raises")  # pragma: no cover
