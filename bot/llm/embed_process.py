"""The documents' encoder in a child process at the lowest CPU priority, fed texts over a pipe.

In the bot's own process the encoder's thread (even at nice 19, ONNX on one thread) still takes the GIL for
tokenizing, pooling and its Python between runs: under a stream of messages the event loop waited for it, and
three processes on two cores gave replies 11–15 s. A child process shares no GIL with the event loop, and at
nice 19 the kernel gives it only the CPU that replies, SQL and the other processes leave; the bound on waiting
texts (bot/memory/recall/pending.py) takes what it cannot do. The parent's side is one thread blocked in the
pipe (no GIL while it waits). The child exits when the pipe closes (the bot stopped or died); a child that died
is started again at the next batch. It runs in a session of its own: Ctrl-C at the console's terminal goes to the
terminal's process group, and a child still starting printed a KeyboardInterrupt traceback (the bot decides when
it stops; the pipe closes then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
NICE = 19
STOP_SECONDS = 5.0
# The child's program: the pipe's descriptor and the niceness come as its arguments.
CHILD = "import sys; from bot.llm.embed_process import child; child(sys.argv[1:])"


def _serve(conn: Connection, nice: int) -> None:
    """The child: load the model, then encode each list of texts received until the pipe closes."""
    with contextlib.suppress(OSError):
        os.nice(nice)
    from bot.llm.local_embedder import load_minilm

    model = load_minilm()
    while True:
        try:
            texts = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        try:
            reply: Any = model.encode(texts) if model is not None else "the offline embedding model is not available"
        except Exception as exc:  # noqa: BLE001 -- any failure goes to the parent, which logs it (backlog keeps the texts)
            reply = f"{type(exc).__name__}: {exc}"
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            return


def child(argv: list[str]) -> None:
    """The child's entry (`CHILD`): serve on the inherited pipe at the given niceness."""
    _serve(Connection(int(argv[0])), int(argv[1]))


class EncoderProcess:
    """`await encode(texts)`: unit-length float32 rows computed in a niced child process."""

    def __init__(self, *, nice: int = NICE) -> None:
        self._nice = nice
        self._lock = threading.Lock()  # one round trip at a time on the pipe
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elefant-embed-pipe")
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def warm(self) -> None:
        """Start the child soon, off the event loop (it loads the model at its own low priority)."""
        self._thread.submit(self._started)

    def _started(self) -> None:
        with self._lock:
            self._start()

    def _start(self) -> Connection:
        if self._conn is None or self._process is None or self._process.poll() is not None:
            self._stop()
            ours, theirs = socket.socketpair()
            self._process = subprocess.Popen(  # noqa: S603 -- this interpreter, this module
                # -c, not -m: bot.llm imports this module first, and runpy warns about running it again.
                [sys.executable, "-c", CHILD, str(theirs.fileno()), str(self._nice)],
                pass_fds=[theirs.fileno()],
                start_new_session=True,
            )
            theirs.close()
            self._conn = Connection(ours.detach())
        return self._conn

    async def encode(self, texts: list[str]) -> np.ndarray:
        """The texts' rows, from the child (started, or started again, when needed)."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._round_trip, list(texts))

    def _round_trip(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            conn = self._start()
            try:
                conn.send(texts)
                reply = conn.recv()
            except (EOFError, OSError) as exc:  # the child died (killed, out of memory): a new one next time
                self._stop()
                raise RuntimeError("the embedding process stopped") from exc
        if isinstance(reply, str):
            raise RuntimeError(reply)
        return np.asarray(reply, dtype=np.float32)

    def _stop(self) -> None:
        if self._conn is not None:
            self._conn.close()  # the child reads EOF and exits
            self._conn = None
        if self._process is not None:
            try:
                self._process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(STOP_SECONDS)
            self._process = None

    def close(self) -> None:
        """Stop the child (a batch under way is dropped: it is found again as backlog) and the pipe's thread."""
        self._thread.shutdown(wait=False, cancel_futures=True)
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()  # a round trip blocked in recv() reads EOF and lets go of the lock
        with self._lock:
            self._stop()
