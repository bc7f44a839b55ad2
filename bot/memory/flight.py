"""Single flight: concurrent requests for one key share one computation, and shutdown stops them all."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from bot.answer_due import detached

T = TypeVar("T")
log = logging.getLogger(__name__)


class SingleFlight:
    """Concurrent requests for one key share one computation; a waiter that gives up does not cancel it."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    def start(self, key: Hashable, factory: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """The computation for `key`: the one running, else `factory()` started and registered now.

        Registered before this returns, so `stop()` reaches even work that has not had its first step yet.
        """
        future = self._running.get(key)
        if future is None or future.done():  # done but not yet unregistered: its result may be stale now
            work = factory()  # shared by whoever asks: not hurried by the deadline of the reply that asked first
            future = (
                asyncio.get_running_loop().create_task(work, context=detached())
                if asyncio.iscoroutine(work)
                else asyncio.ensure_future(work)
            )
            self._running[key] = future
            future.add_done_callback(lambda done: self._forget(key, done))
            future.add_done_callback(read_failure)
        return future

    def _forget(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        if self._running.get(key) is done:  # a newer computation may hold the key already
            del self._running[key]

    async def run(self, key: Hashable, factory: Callable[[], Awaitable[T]]) -> T:
        """The result of `factory()`, computed once for everyone asking for `key` meanwhile."""
        return await asyncio.shield(self.start(key, factory))

    async def stop(self) -> None:
        """Cancel every computation still running and wait for them (at shutdown, before the engine goes)."""
        running = list(self._running.values())
        for future in running:
            future.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def read_failure(done: asyncio.Future[Any]) -> None:
    """A done callback for shared work: read what it raised. Whoever still waits gets it too, but when every asker
    gave up (a reply past its deadline, a storage outage) nobody would, and asyncio would print it with its whole
    traceback, one per reply."""
    if not done.cancelled() and (exc := done.exception()) is not None:
        log.debug("a shared computation failed: %s", type(exc).__name__)
