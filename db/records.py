"""The plain records every front end hands to storage (no discord.py, no ORM), and their normalisation.

Text that databases refuse (NUL, lone surrogates), control characters, names longer than their column and
IDs outside BIGINT are fixed or refused here, before a row can poison the batch it would travel in. So are times
no Discord message can have: a message dated 0001-01-01 or 9999-12-31 would be stored, and every day-based
step after it (summaries, deletions) would have to cope with the ends of the calendar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import IntEnum

# Not allowed in XML 1.0 (so not in a prompt's data elements), and never meaningful in chat: C0 controls
# other than tab / newline / carriage return, lone surrogates, and the two non-characters U+FFFE / U+FFFF.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
NAME_CHARS = 100  # member_names columns
MAX_ID = 2**63 - 1  # BIGINT; Discord snowflakes are far below it
DISCORD_EPOCH = datetime(2015, 1, 1, tzinfo=UTC)  # the first moment a snowflake can name: nothing is older
AHEAD = timedelta(days=1)  # clocks disagree a little; a message a day ahead of ours comes from no real clock


class Kind(IntEnum):
    """What a stored message is, for the readers that must tell them apart."""

    SPEECH = 0  # people talking among themselves: everything memory is built from
    # Addressed to the bot (a question, a command, chat with it: whatever bot/reply/routing.py `address` finds):
    # the conversation with the bot is no evidence of what people said. Kept for the channel's window and for
    # deletion with its author, never a recall candidate, summary material or "what X said".
    ADDRESSED = 1
    BOT = 2  # the bot's own reply: derived data, kept with its sources, never summarised or recalled


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """One guild message, as any front end (Discord, console, importer) hands it to memory."""

    guild_id: int
    channel_id: int
    message_id: int
    author_id: int
    author_name: str
    content: str
    created_at: datetime
    reply_to_id: int | None = None
    mentioned_user_ids: tuple[int, ...] = field(default=())
    author_username: str | None = None
    edited_at: datetime | None = None
    kind: Kind = Kind.SPEECH


@dataclass(frozen=True, slots=True)
class MessageEdit:
    """New text for a stored message; only a newer edit than the stored one wins."""

    message_id: int
    content: str
    edited_at: datetime


@dataclass(frozen=True, slots=True)
class MessageDelete:
    """One or many messages removed in Discord (bulk deletes arrive as one event)."""

    message_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MessageKind:
    """A stored message's kind changes (older versions re-kinded a message after routing it: their spill files may
    still hold one)."""

    message_id: int
    kind: Kind


@dataclass(frozen=True, slots=True)
class ReplySource:
    """One thing a stored reply of the bot was built from: a member's data, or a message it quoted."""

    reply_id: int
    guild_id: int
    user_id: int | None = None
    message_id: int | None = None


@dataclass(frozen=True, slots=True)
class MessageVector:
    """A message's embedding (int8 bytes × scale), stored only while the message is, and only while it still
    says `text`, what was embedded (None: any text; records spilled by an older version)."""

    message_id: int
    guild_id: int
    model: str
    vector: bytes
    scale: float
    text: str | None = None


IngestOp = IncomingMessage | MessageEdit | MessageDelete | MessageKind | ReplySource | MessageVector


class RefusedRecordError(ValueError):
    """A record that cannot be stored as it is, whatever is done to its text; the message says why."""


def clean(text: str) -> str:
    """Text every store and prompt accepts: no NUL or other control characters, lone surrogates replaced."""
    if text.isprintable():  # the common case: nothing to do, and cheap to find out
        return text
    return _CONTROL.sub("", _SURROGATE.sub("\ufffd", text))


def valid_id(value: int | None, what: str) -> None:
    """Refuse IDs a BIGINT column cannot hold (a snowflake is positive and below 2^63)."""
    if value is not None and not 0 < value <= MAX_ID:
        raise RefusedRecordError(f"{what} {value} is outside the range of a Discord ID")


def possible_time(value: datetime, now: datetime) -> bool:
    """Whether a Discord message can have been written at `value` (naive times are taken as UTC)."""
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return DISCORD_EPOCH <= moment <= now + AHEAD


def valid_time(value: datetime | None, what: str, now: datetime) -> None:
    """Refuse times outside Discord's possible range: before 2015, or more than a day ahead of `now`."""
    if value is not None and not possible_time(value, now):
        raise RefusedRecordError(
            f"{what} {value.isoformat()} is outside the times a Discord message can have "
            f"({DISCORD_EPOCH.date()} to a day after {now.isoformat(timespec='seconds')})"
        )


def _name(value: str | None) -> str | None:
    return None if value is None else clean(value)[:NAME_CHARS]


def normalised(op: IngestOp, *, now: datetime | None = None) -> IngestOp:
    """`op` with text every database accepts; RefusedRecordError for IDs and times nothing should store.

    `now` bounds the future (the caller's clock; the real time when None).
    """
    now = now or datetime.now(UTC)
    if isinstance(op, IncomingMessage):
        return _message(op, now)
    if isinstance(op, MessageEdit):
        valid_id(op.message_id, "message id")
        valid_time(op.edited_at, "edited at", now)
        content = clean(op.content)
        return op if content == op.content else replace(op, content=content)
    if isinstance(op, MessageDelete):
        ids = tuple(i for i in op.message_ids if 0 < i <= MAX_ID)  # an impossible ID names no stored row
        return op if len(ids) == len(op.message_ids) else MessageDelete(ids)
    for name in ("message_id", "reply_id", "guild_id", "user_id"):  # vectors, kinds, reply sources
        valid_id(getattr(op, name, None), name.replace("_", " "))
    return op


def _message(op: IncomingMessage, now: datetime) -> IncomingMessage:
    for value, what in (
        (op.guild_id, "guild id"),
        (op.channel_id, "channel id"),
        (op.message_id, "message id"),
        (op.author_id, "author id"),
        (op.reply_to_id, "reply id"),
    ):
        valid_id(value, what)
    valid_time(op.created_at, "created at", now)
    valid_time(op.edited_at, "edited at", now)
    ok_mentions = tuple(m for m in op.mentioned_user_ids if 0 < m <= MAX_ID)
    name, username, content = _name(op.author_name) or "", _name(op.author_username), clean(op.content)
    if (name, username, content, ok_mentions) == (
        op.author_name,
        op.author_username,
        op.content,
        op.mentioned_user_ids,
    ):
        return op
    return replace(op, author_name=name, author_username=username, content=content, mentioned_user_ids=ok_mentions)
