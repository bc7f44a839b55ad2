"""What an ingest batch works with besides its SQL: what it reports (`Touched`, `Written`), what it keeps
instead of writing (`DeadLetter`), how a refused row is told from an unavailable database, and the time and
payload conversions of its rows (db/messages.py writes them)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
from sqlalchemy import exc as sa_exc

from db.records import IngestOp, MessageDelete, MessageEdit, MessageKind, MessageVector, possible_time


@dataclass(frozen=True, slots=True)
class Touched:
    """A stored message an edit, delete or re-kinding changed: where it was, as it was."""

    message_id: int
    guild_id: int
    user_id: int
    at: datetime


@dataclass(frozen=True, slots=True)
class Written:
    """What a committed batch did: what its edits and deletes touched, and how many of its messages were new."""

    touched: list[Touched]
    new_messages: int = 0
    known_messages: int = 0  # already stored (a replay, a second import): unchanged, or given a newer edit


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An operation no database will take, with the reason, to be kept instead of written."""

    op: IngestOp
    reason: str


def is_refusal(exc: BaseException) -> bool:
    """True when the database refused a row's values (isolate that row); anything else is retried.

    A missing table, a lock or a lost connection is the database's state, not a row's: retrying is right, and
    dead-lettering every row of the batch would be wrong.
    """
    refused = (
        sqlite3.IntegrityError,
        sqlite3.DataError,
        sqlite3.InterfaceError,
        OverflowError,
        UnicodeError,
        ValueError,
        TypeError,
        asyncpg.DataError,
        asyncpg.IntegrityConstraintViolationError,
        sa_exc.DataError,
        sa_exc.IntegrityError,
    )
    return isinstance(exc, refused)


def _sqlite_time(value: datetime) -> str:
    # The exact text SQLAlchemy's SQLite DateTime stores (naive UTC), built in C: ~4x faster than its
    # bind processor, and this runs for every ingested message.
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:26]


def _aware_time(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


def _payload(op: IngestOp) -> str:
    # "record", not "kind": a message's own `kind` field (speech, command, bot) would overwrite it.
    fields = asdict(op)
    if isinstance(op, MessageVector):
        # The words it was embedded from are the message's own: kept here, they would outlive the member's
        # deletion and a "forget that…" (which find a dead letter by its author, channel and "content").
        fields.pop("text", None)
    return json.dumps({"record": type(op).__name__, **fields}, default=str, ensure_ascii=True)


def _dead_at(op: IngestOp) -> datetime:
    """When a dead letter was said: the message's own time (an edit's), so a purge of that period or retention
    takes it with the stored messages of then; the time of refusal when the record's own time is impossible."""
    now = datetime.now(UTC)
    said = getattr(op, "created_at", None) or getattr(op, "edited_at", None)
    if isinstance(said, datetime) and possible_time(said, now):
        return said if said.tzinfo is not None else said.replace(tzinfo=UTC)
    return now


def touched_ids(ops: Sequence[IngestOp]) -> list[int]:
    """The stored messages whose derived data the operations invalidate."""
    ids: list[int] = []
    for op in ops:
        if isinstance(op, MessageDelete):
            ids.extend(op.message_ids)
        elif isinstance(op, MessageEdit | MessageKind):
            ids.append(op.message_id)
    return ids
