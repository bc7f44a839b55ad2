"""Reads behind a recap: what was said in a span, and when a member last spoke — all within the read scope.

Each read composes the read scope's MESSAGES filters (db/scope.py) for a reader in `scope.here`: what a question
asked there may find. A private channel's or thread's messages are read only from itself, opted-out members and
the bot's own conversation never.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.models import ChannelPrivacy, ChatMessage
from db.scope import Scope
from db.search.types import Turn


def _in_channel(guild_id: int, channel_id: int) -> ColumnElement[bool]:
    """A channel's messages and those of its threads."""
    threads = select(ChannelPrivacy.channel_id).where(
        ChannelPrivacy.guild_id == guild_id, ChannelPrivacy.parent_id == channel_id
    )
    return or_(ChatMessage.channel_id == channel_id, ChatMessage.channel_id.in_(threads))


Query = TypeVar("Query", bound=Select[*tuple[Any, ...]])


def _readable(query: Query, scope: Scope, channel_id: int | None) -> Query:
    query = query.where(scoping.clause(scoping.MESSAGES, "chat_history", scope))
    return query.where(_in_channel(scope.guild_id, channel_id)) if channel_id is not None else query


async def span_messages(
    session: AsyncSession,
    scope: Scope,
    *,
    since: datetime,
    until: datetime,
    channel_id: int | None,
    limit: int,
) -> list[Turn]:
    """What was said in [since, until) in a channel (with its threads) or anywhere (None), as a reader in
    `scope.here` may see it; oldest first, at most the newest `limit`."""
    query = _readable(
        select(
            ChatMessage.message_id,
            ChatMessage.channel_id,
            ChatMessage.user_id,
            ChatMessage.message_text,
            ChatMessage.timestamp,
            ChatMessage.reply_to_id,
        ).where(ChatMessage.timestamp >= since, ChatMessage.timestamp < until),
        scope,
        channel_id,
    )
    newest = query.order_by(ChatMessage.timestamp.desc(), ChatMessage.message_id.desc()).limit(limit)
    rows = (await session.execute(newest)).all()
    return [Turn(m, c, u, text, at, r) for m, c, u, text, at, r in reversed(rows)]


async def last_said(
    session: AsyncSession,
    scope: Scope,
    *,
    before: datetime,
    channel_id: int | None,
    by: int | None = None,
    not_by: int | None = None,
) -> datetime | None:
    """When the newest message before `before` was said (by one member, or by anyone but one), in a channel (with
    its threads) or anywhere, as a reader in `scope.here` may see it; None: nothing was."""
    query = select(ChatMessage.timestamp).where(ChatMessage.timestamp < before)
    if by is not None:
        query = query.where(ChatMessage.user_id == by)
    if not_by is not None:
        query = query.where(ChatMessage.user_id != not_by)
    found = await session.scalar(_readable(query, scope, channel_id).order_by(ChatMessage.timestamp.desc()).limit(1))
    return found if isinstance(found, datetime) else None
