"""Full garbage collections between replies, not inside them.

CPython starts a full collection when an allocation finds enough new long-lived objects, and replies allocate
the most, so most full collections ran inside one: with start-up's objects frozen (bot/app.py) one still walked
what the caches, discord.py's message cache and the vector index's bookkeeping hold, ~40,000 objects, for 11–15
ms (bench.reply, every ~7 s with 50 messages a second coming in). While the long-running app runs, CPython
starts none itself; the young generations are collected as before, and a full collection runs here: after as
many middle-generation collections as CPython waits for before it considers one, no more often than every
FULL_EVERY_SECONDS nor than keeps it under 1 % of the time (a bigger heap waits longer), and when no reply is
under way: at once, or as the last reply under way ends, before the next can begin (after FULL_WAIT_SECONDS of
replies that always overlap, anyway: an always busy guild collects too). A reply ends after it is sent, so the
member who asked never waits for a collection; one asking in that moment waits for it, as they would for any.

Python 3.14's collector is incremental (its third threshold means something else, and a collection is no long
pause): there CPython's own rule stays.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial

from bot.lifecycle import spawn

FULL_EVERY_SECONDS = 10.0
FULL_AFTER = 10  # middle-generation collections since the last full one (CPython's default third threshold)
COST_SHARE = 100  # a collection that took d seconds is followed by at least COST_SHARE × d seconds without one
FULL_WAIT_SECONDS = 5.0  # the longest a full collection waits for a moment without a reply
NEVER = 1 << 30  # as the third threshold: CPython starts no full collection of its own

_holders = 0  # collectors running in this process (apps may overlap in one, e.g. in tests)
_saved: tuple[int, int, int] | None = None  # CPython's thresholds before the first of them


def wanted() -> bool:
    """Whether this Python's collector is the generational one this policy was measured with."""
    return sys.version_info < (3, 14)


Between = Callable[[Callable[[], object], float], Awaitable[object]]  # `Replies.between`


async def collect_between_replies(between: Between) -> None:
    """Run until cancelled: full collections between replies (`between(work, seconds)` runs `work` when no reply is
    under way, or after the seconds given). CPython's thresholds are back once the last collector in the process
    stops."""
    global _holders, _saved  # noqa: PLW0603 - one setting per process, shared by every app in it
    if _holders == 0:
        _saved = gc.get_threshold()
        gc.set_threshold(_saved[0], _saved[1], NEVER)
    _holders += 1
    try:
        pause = FULL_EVERY_SECONDS
        while True:
            await asyncio.sleep(pause)
            if gc.get_count()[2] < FULL_AFTER:
                continue
            took: list[float] = []
            await between(partial(_collect, took), FULL_WAIT_SECONDS)
            pause = max(FULL_EVERY_SECONDS, COST_SHARE * sum(took))
    finally:
        _holders -= 1
        if _holders == 0 and _saved is not None:
            gc.set_threshold(*_saved)


def _collect(took: list[float]) -> None:
    began = time.perf_counter()
    gc.collect()
    took.append(time.perf_counter() - began)


def start(between: Between) -> asyncio.Task[None] | None:
    """`collect_between_replies` in the background where this Python's collector is the one it was measured with
    (None elsewhere)."""
    return spawn(collect_between_replies(between), name="garbage collector") if wanted() else None


async def stop(collector: asyncio.Task[None] | None) -> None:
    """Stop what `start` started, and wait until it has (CPython's thresholds are back then)."""
    if collector is not None:
        collector.cancel()
        await asyncio.gather(collector, return_exceptions=True)
