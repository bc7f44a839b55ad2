"""Process lifecycle helpers: graceful shutdown on signals, background tasks that log their failures."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)
_background: set[asyncio.Task[Any]] = set()


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set `stop` on SIGINT/SIGTERM so the caller can drain queues before the process exits."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, _request_stop, stop, sig)


def _request_stop(stop: asyncio.Event, sig: signal.Signals) -> None:
    log.info("received %s, shutting down after draining", sig.name)
    stop.set()


def spawn(coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    """Start a background task that is kept referenced and whose failure is logged, not lost."""
    task = asyncio.create_task(coro, name=name)
    _background.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task[Any]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())
