"""Process lifecycle helpers: graceful shutdown on signals, background tasks that log their failures."""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from bot.answer_due import detached

log = logging.getLogger(__name__)
_background: dict[asyncio.Future[Any], str] = {}
T = TypeVar("T")


class StopRequest(asyncio.Event):
    """Set when the process is asked to stop; `received` is the signal that asked first (None: asked by code)."""

    received: signal.Signals | None = None


class StoppedError(Exception):
    """Work was cancelled because the process was asked to stop."""


def stop_on_signals(stop: asyncio.Event) -> Callable[[], None]:
    """Set `stop` on SIGINT/SIGTERM so the caller can drain queues before the process exits; returns the undo.

    The event loop's signal handlers do not exist on Windows (NotImplementedError there): the process-wide
    `signal.signal` is used instead, handing the stop to the loop thread-safely.
    """
    loop = asyncio.get_running_loop()
    undo: list[Callable[[], None]] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, _request_stop, stop, sig)
            undo.append(functools.partial(_remove_handler, loop, sig))
        except (NotImplementedError, RuntimeError):  # Windows; or not the main thread's loop
            previous = signal.getsignal(sig)
            signal.signal(sig, functools.partial(_from_signal_module, loop, stop))
            undo.append(functools.partial(_restore_handler, sig, previous))

    def restore() -> None:
        for step in undo:
            step()

    return restore


def _remove_handler(loop: asyncio.AbstractEventLoop, sig: signal.Signals) -> None:
    loop.remove_signal_handler(sig)


def _restore_handler(sig: signal.Signals, previous: Any) -> None:
    signal.signal(sig, previous)


def _from_signal_module(loop: asyncio.AbstractEventLoop, stop: asyncio.Event, signum: int, _frame: object) -> None:
    loop.call_soon_threadsafe(_request_stop, stop, signal.Signals(signum))


def _request_stop(stop: asyncio.Event, sig: signal.Signals) -> None:
    log.info("received %s, shutting down after draining", sig.name)
    if isinstance(stop, StopRequest) and stop.received is None:
        stop.received = sig
    stop.set()


async def unless_stopped(work: Awaitable[T], stop: asyncio.Event) -> T:
    """Await `work`; if `stop` is set first, cancel it, let it unwind, and raise StoppedError.

    Cancelling lands on one of the work's awaits, so whatever it finished before that point stays done and
    its `finally` / `async with` blocks still run.
    """
    task = asyncio.ensure_future(work)
    if stop.is_set():
        task.cancel()
    else:
        try:
            await set_or_done(stop, task)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.done():
            return task.result()
        task.cancel()
    try:
        return await task  # it may still finish: then its result stands
    except asyncio.CancelledError:
        raise StoppedError from None


async def set_or_done(event: asyncio.Event, future: asyncio.Future[Any], *, within: float | None = None) -> None:
    """Wait until `event` is set or `future` is done, for `within` seconds at most; `future` goes on either way."""
    if event.is_set() or future.done():
        return
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({future, waiter}, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


def spawn(coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    """Start a background task that is kept referenced and whose failure is logged, not lost (and not hurried by
    the reply that may have started it: it keeps its model retries)."""
    task = asyncio.get_running_loop().create_task(coro, name=name, context=detached())
    keep(task, name=name)
    return task


def abandon(future: asyncio.Future[Any], *, name: str) -> None:
    """Work no longer wanted (its caller failed, or took another way): cancel it, and let what it raised be read and
    logged like background work's (storage trouble at DEBUG: the storage fault says it once), never left for
    asyncio to report with its whole traceback as an exception nobody retrieved."""
    future.cancel()
    keep(future, name=name)


def keep(future: asyncio.Future[Any], *, name: str) -> asyncio.Future[Any]:
    """Let work already running go on in the background: referenced until done, its failure logged."""
    _background[future] = name
    future.add_done_callback(lambda done: _finished(done, name))
    return future


def running() -> list[str]:
    """The names of this loop's background work still running (shutdown must leave none behind)."""
    return [name for _, name in _under_way()]


async def landed(prefix: str, *more: str) -> None:
    """Until this loop's background work whose name starts with one of the prefixes is done, and what such work
    started meanwhile."""
    prefixes = (prefix, *more)
    while pending := [future for future, name in _under_way() if name.startswith(prefixes)]:
        await asyncio.wait(pending)


def _under_way() -> list[tuple[asyncio.Future[Any], str]]:
    """This loop's background work still running, with its names."""
    loop = asyncio.get_running_loop()
    return [(future, name) for future, name in _background.items() if future.get_loop() is loop and not future.done()]


def _finished(future: asyncio.Future[Any], name: str) -> None:
    _background.pop(future, None)
    if not future.cancelled() and (exc := future.exception()) is not None:
        # Imported here: the CLI's `--help` imports this module and must not import SQLAlchemy (bot/faults.py does).
        from bot.faults import storage_trouble

        if storage_trouble(exc):  # the storage fault (bot/faults.py) says once that the database is away
            log.debug("background work %s failed", name, exc_info=exc)
        else:
            log.error("background work %s failed", name, exc_info=exc)


class Debounced:
    """Work run once, `delay` seconds after the first request of a burst; `now` runs a pending one at once.

    For upkeep after deletions (scrubbing the write-ahead log, rewriting the SQLite file): a burst of deletes
    costs one run, and a flush or a stop need not wait out the delay.
    """

    def __init__(self, work: Callable[[], Awaitable[Any]], delay: Callable[[], float], *, name: str) -> None:
        self._work = work
        self._delay = delay
        self._name = name
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> bool:
        """Whether a run is waiting (or under way)."""
        return self._task is not None and not self._task.done()

    def request(self) -> None:
        """Run the work `delay` seconds from now, unless a run is already waiting."""
        if not self.pending:
            self._task = asyncio.create_task(self._later(), name=self._name)

    async def _later(self) -> None:
        await asyncio.sleep(self._delay())
        await self._work()

    async def now(self) -> None:
        """Run a waiting run at once (nothing when none waits)."""
        if self.pending:
            await self.cancel()
            await self._work()

    async def cancel(self) -> None:
        """Drop a waiting run."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
