"""Plain data the memory layer takes in, so it never imports discord.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


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


IngestOp = IncomingMessage | MessageEdit | MessageDelete
