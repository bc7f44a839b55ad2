"""The console's input: lines typed at a terminal (with line editing) or read from a pipe, each read in a daemon
thread so that a stop never waits for a line that may never come."""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

T = TypeVar("T")


class Lines:
    """Input lines, read by daemon threads, so that a stop never waits for a line that may never come.

    A pipe or file is read in chunks straight from its descriptor: a daemon thread blocked inside Python's
    buffered stdin would hold its lock, and the interpreter aborts when it closes stdin at exit.
    """

    def __init__(self, stdin: TextIO, interactive: bool) -> None:
        self._stdin = stdin
        self._interactive = interactive
        try:
            self._fd: int | None = stdin.fileno()
        except (AttributeError, OSError, ValueError):  # a StringIO in tests: reading it never blocks
            self._fd = None
        self._encoding = getattr(stdin, "encoding", None) or "utf-8"
        self._ready: deque[str] = deque()
        self._rest = b""
        self._ended = False
        self._terminal = _terminal_state(self._fd) if interactive else None

    async def next(self, prompt: str | None) -> str | None:
        """The next line (without its end), or None at the end of input."""
        if self._interactive:
            return await self._in_thread(_prompted_line, prompt or "")
        if self._fd is None:
            return self._stdin.readline() or None
        while not self._ready and not self._ended:
            chunk = await self._in_thread(os.read, self._fd, 1 << 16)
            self._split(chunk)
        return self._ready.popleft() if self._ready else None

    def close(self) -> None:
        """Give the terminal back as it was (a prompt abandoned mid-line leaves it in line-editing mode)."""
        if self._terminal is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._terminal)  # type: ignore[arg-type]

    def _split(self, chunk: bytes) -> None:
        if not chunk:
            self._ended = True
            if self._rest:
                self._ready.append(self._rest.decode(self._encoding, "replace"))
            return
        *complete, self._rest = (self._rest + chunk).split(b"\n")
        self._ready.extend(line.decode(self._encoding, "replace") for line in complete)

    async def _in_thread(self, read: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def run() -> None:
            try:
                result, exc = read(*args), None
            except BaseException as error:  # noqa: BLE001 - handed to the awaiting coroutine
                result, exc = None, error
            with contextlib.suppress(RuntimeError):  # the loop is gone: a stop abandoned this read
                loop.call_soon_threadsafe(_settle, future, result, exc)

        threading.Thread(target=run, name="elefant-console-input", daemon=True).start()
        return await future


def _settle(future: asyncio.Future[T], result: T | None, exc: BaseException | None) -> None:
    if future.done():  # abandoned by a stop
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)  # type: ignore[arg-type]


def _prompted_line(prompt: str) -> str | None:
    """One line typed at a terminal, with line editing and history; None at the end (Ctrl-D)."""
    try:
        import readline  # noqa: F401 - importing it gives input() history and line editing

        return input(prompt)
    except EOFError:
        return None


def _terminal_state(fd: int | None) -> list[Any] | None:
    if fd is None:
        return None
    try:
        return termios.tcgetattr(fd)
    except termios.error:
        return None
