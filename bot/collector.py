"""Full garbage collections between replies, not inside them.

CPython starts a full collection when an allocation finds enough new long-lived objects, and replies allocate
the most, so most full collections ran inside one: with start-up's objects frozen (bot/app.py) one still walked
what the caches, discord.py's message cache and the vector index's bookkeeping hold, ~40,000 objects, for 11–15
ms (bench.reply, every ~7 s with 50 messages a second coming in). Here the young generations are collected as
before; a full collection waits until no reply is under way, at most FULL_WAIT_SECONDS.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable

FULL_EVERY_SECONDS = 10.0  # a full collection at most this often, and only after allocations warranted one
FULL_AFTER = 10  # middle-generation collections since the last full one: CPython's own default
FULL_WAIT_SECONDS = 5.0  # the longest a full collection waits for a quiet moment
NEVER = 1 << 30  # as a threshold: CPython starts no full collection of its own


async def collect_between_replies(quiet: Callable[[float], Awaitable[object]]) -> None:
    """Run until cancelled: full collections at quiet moments (`quiet(seconds)` returns when no reply is under way,
    or after the seconds given); CPython's own thresholds are back afterwards."""
    young, middle, full = gc.get_threshold()
    if full == NEVER:  # another app in this process runs one: what is restored must never be "never"
        full = FULL_AFTER
    gc.set_threshold(young, middle, NEVER)
    try:
        while True:
            await asyncio.sleep(FULL_EVERY_SECONDS)
            if gc.get_count()[2] >= min(full, FULL_AFTER):
                await quiet(FULL_WAIT_SECONDS)
                gc.collect()
    finally:
        gc.set_threshold(young, middle, full)
