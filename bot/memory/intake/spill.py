"""Spill files: the ingest queue's overflow on disk while storage lags, and what a stop could not store.

A spill file (`ingest-spill-<time>-<pid>.jsonl`) is JSON lines: a header naming the database, then one record
per operation in arrival order. While storage keeps up nothing is written. When the queue is full, new
operations are appended to a spill file instead (written and fsync'd in batches, in a thread) and read back in
order as the queue drains; a file is removed once everything in it is written. What a stop could not store
stays in a spill file, and the next process on the same database replays it first (writes are idempotent
upserts by message id, so replaying a record twice changes nothing). A process holds an exclusive flock on
every file it owns, so no other process replays a file that is still in use.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from db.ingest_rows import DeadLetter
from db.records import (
    IncomingMessage,
    IngestOp,
    Kind,
    MessageDelete,
    MessageEdit,
    MessageKind,
    MessageVector,
    ReplySource,
)

log = logging.getLogger(__name__)

PATTERN = "ingest-spill-*.jsonl"
_FORMAT = 1
_RECORDS: dict[str, type] = {
    cls.__name__: cls for cls in (IncomingMessage, MessageEdit, MessageDelete, MessageKind, ReplySource, MessageVector)
}
_TIMES = frozenset({"created_at", "edited_at"})
_TUPLES = frozenset({"mentioned_user_ids", "message_ids"})

Op = IngestOp | DeadLetter


# ---- the record format --------------------------------------------------------------------------------------


def _plain(op: IngestOp) -> dict[str, Any]:
    # "record", not "kind": IncomingMessage has a field called kind.
    record: dict[str, Any] = {"record": type(op).__name__}
    for field in fields(op):  # type: ignore[arg-type]
        value = getattr(op, field.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, bytes):  # a vector
            value = base64.b64encode(value).decode("ascii")
        record[field.name] = value
    return record


def encode(op: Op) -> str:
    """One operation as one JSON line (without the newline)."""
    if isinstance(op, DeadLetter):
        return json.dumps({"record": "DeadLetter", "reason": op.reason, "op": _plain(op.op)}, ensure_ascii=False)
    return json.dumps(_plain(op), ensure_ascii=False)


def _op(record: dict[str, Any]) -> IngestOp:
    cls = _RECORDS[record.pop("record")]
    for name in _TIMES & record.keys():
        if record[name] is not None:
            record[name] = datetime.fromisoformat(record[name])
    for name in _TUPLES & record.keys():
        record[name] = tuple(record[name])
    if "kind" in record:
        record["kind"] = Kind(record["kind"])
    if cls is MessageVector:
        record["vector"] = base64.b64decode(record["vector"])
    return cls(**record)  # type: ignore[no-any-return]


def decode(line: str | bytes) -> Op:
    """The operation `encode` wrote."""
    record = json.loads(line)
    if record.get("record") == "DeadLetter":
        return DeadLetter(_op(record["op"]), record["reason"])
    return _op(record)


def database_identity(url: str, sqlite_path: str | None) -> str:
    """Which database a spill file belongs to: the absolute file for SQLite, the URL without password otherwise."""
    if sqlite_path:
        return "sqlite:" + str(Path(sqlite_path).expanduser().resolve())
    return url


# ---- marks: points in the queue -----------------------------------------------------------------------------


@dataclass(eq=False)
class Mark:
    """A point in the queue: a flush waiting for what came before it, or a spill file to remove once written."""

    done: asyncio.Future[None] | None = None
    then: Callable[[], None] | None = None

    def reached(self) -> None:
        """Everything before this point is stored (or kept in a spill file at a stop)."""
        if self.then is not None:
            self.then()
        if self.done is not None and not self.done.done():
            self.done.set_result(None)


# ---- files --------------------------------------------------------------------------------------------------


def _new_path(directory: Path) -> Path:
    # Names sort in creation order (nanoseconds first), which is the order leftovers are replayed in.
    return directory / f"ingest-spill-{time.time_ns()}-{os.getpid()}.jsonl"


def _create(path: Path, database: str) -> IO[bytes]:
    """Create a spill file, lock it before anyone can read it as a leftover, and write its header."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Only this user may read it: it holds what members said, in clear.
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    handle = open(descriptor, "rb+")  # noqa: SIM115 - held open (and locked) for the file's whole life
    fcntl.flock(handle, fcntl.LOCK_EX)  # blocks only while another process checks an empty file's header
    handle.write(json.dumps({"elefant_spill": _FORMAT, "database": database}).encode() + b"\n")
    handle.flush()
    return handle


def _append(handle: IO[bytes], lines: list[str]) -> None:
    handle.seek(0, os.SEEK_END)
    handle.write(("\n".join(lines) + "\n").encode())
    handle.flush()
    os.fsync(handle.fileno())


def _read(handle: IO[bytes], offset: int, count: int) -> tuple[list[Op], int, int]:
    """Up to `count` records from `offset`: (operations, next offset, lines read)."""
    handle.seek(offset)
    ops = []
    lines = 0
    for _ in range(count):
        line = handle.readline()
        if not line:
            break
        lines += 1
        try:
            ops.append(decode(line))
        except (ValueError, KeyError, TypeError):  # a damaged line must not stop the lines after it
            log.error("skipping an unreadable record in %s: %.200r", getattr(handle, "name", "a spill file"), line)
    return ops, handle.tell(), lines


def _adopt(path: Path, database: str) -> tuple[IO[bytes], int, int] | None:
    """Open and lock a leftover of this database that no live process holds: (handle, header end, records)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - kept open (and locked) until the file is replayed
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # The file may have been replayed and removed by another process between our open and our lock.
        if os.fstat(handle.fileno()).st_ino != path.stat().st_ino:
            raise OSError("replaced")
        header = json.loads(handle.readline() or b"null")
        if not isinstance(header, dict) or header.get("database") != database:
            raise ValueError("another database or format")
        start = handle.tell()
        records = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except (OSError, ValueError):
        handle.close()
        return None
    return handle, start, records


class _Segment:
    """One spill file being drained: records on disk from `offset`, then appended ones not yet written."""

    def __init__(self, path: Path, *, handle: IO[bytes] | None = None, offset: int = 0, records: int = 0) -> None:
        self.path = path
        self.handle = handle
        self.offset = offset
        self.on_disk = records  # written, not yet read back
        self.buffer: list[tuple[Op, str]] = []  # appended, not yet written
        self.appended = records
        self.taken = 0
        self.marks: deque[tuple[int, Mark]] = deque()  # (records appended before it, mark)
        self.open = handle is None  # ours: new operations may still be appended

    def __len__(self) -> int:
        return self.on_disk + len(self.buffer)

    def due_marks(self) -> list[Mark]:
        due = []
        while self.marks and self.marks[0][0] <= self.taken:
            due.append(self.marks.popleft()[1])
        return due

    def remove(self) -> None:
        """Everything in this file is stored: remove it (still holding the lock), then let go of it."""
        if self.handle is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.handle.close()
        self.handle = None


class Overflow:
    """The queue's tail on disk: operations that did not fit, in order, until the queue takes them back.

    Appending never waits (it encodes one line); writing and fsyncing happen in batches in a thread.
    """

    def __init__(self, directory: Path, database: str) -> None:
        self.directory = directory
        self.database = database
        self._segments: deque[_Segment] = deque()
        self._io = asyncio.Lock()  # one file operation at a time: reads see only whole, written lines
        self._dirty = asyncio.Event()
        self._syncer: asyncio.Task[None] | None = None
        self._kept: IO[bytes] | None = None
        self.kept_path: Path | None = None

    def __len__(self) -> int:
        return sum(len(segment) for segment in self._segments)

    def __bool__(self) -> bool:
        return bool(self._segments)

    def adopt_leftovers(self) -> int:
        """Queue the spill files earlier processes left for this database, oldest first; records adopted."""
        if not self.directory.is_dir():
            return 0
        adopted = 0
        for path in sorted(self.directory.glob(PATTERN)):
            found = _adopt(path, self.database)
            if found is None:
                continue
            handle, offset, records = found
            self._segments.append(_Segment(path, handle=handle, offset=offset, records=records))
            adopted += records
        return adopted

    def append(self, op: Op) -> None:
        """Add an operation at the end (no waiting: it is written to disk in the next batch)."""
        if not self._segments or not self._segments[-1].open:
            self._segments.append(_Segment(_new_path(self.directory)))
        segment = self._segments[-1]
        segment.buffer.append((op, encode(op)))
        segment.appended += 1
        self._dirty.set()
        if self._syncer is None:
            self._syncer = asyncio.create_task(self._sync_forever(), name="elefant-spill-sync")

    def mark(self, mark: Mark) -> bool:
        """Place `mark` after everything in the overflow; False when the overflow is empty (the caller keeps it)."""
        if not self._segments:
            return False
        segment = self._segments[-1]
        segment.marks.append((segment.appended, mark))
        return True

    async def take(self, limit: int) -> list[Op | Mark]:
        """Up to `limit` of the oldest operations, in order, with the marks that fall among them."""
        items: list[Op | Mark] = []
        taken = 0
        async with self._io:
            while self._segments and taken < limit:
                segment = self._segments[0]
                want = limit - taken
                if segment.on_disk:
                    assert segment.handle is not None
                    asked = min(want, segment.on_disk)
                    ops, segment.offset, lines = await asyncio.to_thread(_read, segment.handle, segment.offset, asked)
                    segment.on_disk = 0 if lines < asked else segment.on_disk - lines  # fewer: the file was cut short
                    # Skipped lines still count, so a damaged file cannot loop forever.
                    taken += lines - len(ops)
                    segment.taken += lines - len(ops)
                else:
                    ops = [op for op, _ in segment.buffer[:want]]
                    del segment.buffer[:want]
                for op in ops:
                    items.append(op)
                    segment.taken += 1
                    items.extend(segment.due_marks())
                taken += len(ops)
                if not len(segment):  # drained: later arrivals start a new file; this one goes once stored
                    segment.open = False
                    self._segments.popleft()
                    items.extend(mark for _, mark in segment.marks)
                    items.append(Mark(then=segment.remove))
        return items

    async def keep(self, ops: list[Op]) -> Path:
        """Write operations a stop could not store to this process's final spill file (fsync'd)."""
        lines = [encode(op) for op in ops]
        async with self._io:
            if self._kept is None:
                self.kept_path = _new_path(self.directory)
                self._kept = await asyncio.to_thread(_create, self.kept_path, self.database)
            await asyncio.to_thread(_append, self._kept, lines)
        assert self.kept_path is not None
        return self.kept_path

    async def close(self) -> None:
        """Write what is buffered and let go of every file (what is left in them is replayed by the next start)."""
        if self._syncer is not None:
            self._syncer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._syncer
        await self._sync()
        for segment in self._segments:
            if segment.handle is not None:
                segment.handle.close()
        self._segments.clear()
        if self._kept is not None:
            self._kept.close()

    async def _sync_forever(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self._sync()
            except OSError:
                # The records stay buffered in memory (and are still taken back in order); try again later.
                log.exception("writing the ingest overflow to %s failed", self.directory)
                await asyncio.sleep(1)
                self._dirty.set()

    async def _sync(self) -> None:
        async with self._io:
            for segment in self._segments:
                if not segment.buffer:
                    continue
                # append() may add lines while this batch is written (it takes no lock): write a snapshot.
                lines = [line for _, line in segment.buffer]
                if segment.handle is None:
                    segment.handle = await asyncio.to_thread(_create, segment.path, self.database)
                    segment.offset = segment.handle.tell()  # records start after the header
                await asyncio.to_thread(_append, segment.handle, lines)
                del segment.buffer[: len(lines)]
                segment.on_disk += len(lines)
