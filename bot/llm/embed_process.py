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

A child that hangs (stopped, deadlocked, its memory swapped out) would keep the batch, and every one after it,
waiting forever without a word: a child that has neither answered nor used any CPU time for HANG_SECONDS is killed
and started again, the batch sent to the new one, with one WARNING when it stopped answering and one when it answers
again. A child that is only slow (at nice 19 on a busy machine a batch or the model's loading can take many seconds)
keeps using CPU time, and is waited for.
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
HANG_SECONDS = 30.0  # no answer and no CPU time used by the child for this long: it is hung
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

    def __init__(self, *, nice: int = NICE, hang_seconds: float = HANG_SECONDS) -> None:
        self._nice = nice
        self._hang_seconds = hang_seconds
        self._answering = True  # False from "stopped answering" until a child answers again
        self._closed = False
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
            reply = self._ask(texts)
            if reply is None:  # hung: the batch goes to a new child (it loads the model first)
                self._restart()
                reply = self._ask(texts)
                if reply is None:
                    self._stop(kill=True)  # the next batch starts another
                    raise RuntimeError(f"the embedding process did not answer within {self._hang_seconds:g} s")
            if not self._answering:
                self._answering = True
                log.warning("the embedding process was restarted and answers again")
        if isinstance(reply, str):
            raise RuntimeError(reply)
        return np.asarray(reply, dtype=np.float32)

    def _ask(self, texts: list[str]) -> Any:
        """The child's reply to `texts`, or None when it is hung (see `_answered`)."""
        conn = self._start()
        try:
            conn.send(texts)
            return conn.recv() if self._answered(conn) else None
        except (EOFError, OSError) as exc:  # the child died (killed, out of memory): a new one next time
            self._stop()
            raise RuntimeError("the embedding process stopped") from exc

    def _answered(self, conn: Connection) -> bool:
        """Wait for the reply (or the end of the pipe); False when the child has used no CPU time for
        `hang_seconds` without answering."""
        assert self._process is not None
        used = _cpu_time(self._process.pid)
        while not conn.poll(self._hang_seconds):
            now = _cpu_time(self._process.pid)
            if now is None or now == used:
                return False
            used = now
        return True

    def _restart(self) -> None:
        if self._answering:
            self._answering = False
            log.warning(
                "the embedding process stopped answering (no answer and no CPU time used for %g s); restarting it",
                self._hang_seconds,
            )
        self._stop(kill=True)  # SIGKILL ends even a stopped process
        if self._closed:
            raise RuntimeError("the embedding process was closed")

    def _stop(self, *, kill: bool = False) -> None:
        if self._conn is not None:
            self._conn.close()  # the child reads EOF and exits
            self._conn = None
        if self._process is not None:
            if kill:
                self._process.kill()
            try:
                self._process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(STOP_SECONDS)
            self._process = None

    def close(self) -> None:
        """Stop the child (a batch under way is dropped: it is found again as backlog) and the pipe's thread."""
        self._closed = True
        self._thread.shutdown(wait=False, cancel_futures=True)
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()  # a round trip blocked in recv() reads EOF and lets go of the lock
        with self._lock:
            self._stop()


def _cpu_time(pid: int) -> int | None:
    """The CPU time (user and system, in clock ticks) a process has used, from Linux's /proc; None elsewhere or when
    it is gone (a hang is then judged on the time alone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after the command's name, which may hold spaces
    except (OSError, IndexError):
        return None
    return int(fields[11]) + int(fields[12])  # utime and stime, the 14th and 15th fields
