"""Builders for realistic test data (snowflake-sized IDs, aware UTC times)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

from bot.memory.types import IncomingMessage

GUILD = 2**60 + 1
OTHER_GUILD = 2**60 + 2
CHANNEL = 2**60 + 100
ALICE = 2**60 + 1001
BOB = 2**60 + 1002
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
_ids = count(2**60 + 10_000_000)


def message(
    content: str = "hello",
    *,
    author: int = ALICE,
    name: str = "alice",
    guild: int = GUILD,
    channel: int = CHANNEL,
    at: datetime | None = None,
    message_id: int | None = None,
    reply_to: int | None = None,
) -> IncomingMessage:
    """One incoming guild message with a fresh snowflake-sized ID unless one is given."""
    return IncomingMessage(
        guild_id=guild,
        channel_id=channel,
        message_id=message_id if message_id is not None else next(_ids),
        author_id=author,
        author_name=name,
        content=content,
        created_at=at or T0,
        reply_to_id=reply_to,
    )


def minutes(n: int) -> timedelta:
    """A timedelta of n minutes, for readable test arithmetic."""
    return timedelta(minutes=n)
