"""The recent conversation of each channel, in memory: what a chat reply sees of "the room".

Kept from ingestion (so it includes what the write-behind queue has not stored yet) and trimmed to a token
budget when read: newest first, the last exchanges always kept, older ones dropped first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import replace

from cachetools import LRUCache

from bot.llm.prompts import ChatLine
from bot.llm.tokens import estimate_tokens
from bot.memory.types import IncomingMessage
from db.mentions import unmentioned

KEEP_PER_CHANNEL = 60
MIN_MESSAGES = 6  # the last three exchanges (a message and its answer each) always fit


class ChannelWindow:
    """The last messages per channel; deletes and edits apply here too."""

    def __init__(self, channels: int = 5000) -> None:
        self._channels: LRUCache[tuple[int, int], deque[IncomingMessage]] = LRUCache(channels)
        # What each of the bot's replies in a window was built from: it goes when they go.
        self._sources: LRUCache[int, tuple[frozenset[int], frozenset[int]]] = LRUCache(channels * KEEP_PER_CHANNEL)

    def add(self, message: IncomingMessage, *, members: Iterable[int] = (), quoted: Iterable[int] = ()) -> None:
        """Remember a message in its channel's window (a reply of the bot with the members and messages it used)."""
        if members or quoted:
            self._sources[message.message_id] = (frozenset(members), frozenset(quoted))
        key = (message.guild_id, message.channel_id)
        window = self._channels.get(key)
        if window is None:
            window = self._channels[key] = deque(maxlen=KEEP_PER_CHANNEL)
        window.append(message)

    def edit(self, message_id: int, content: str) -> None:
        """Apply an edit wherever the message is (replies quoting the old text go)."""
        self._drop_where(lambda m: self._built_on(m.message_id, messages={message_id}))
        for window in self._channels.values():
            for i, m in enumerate(window):
                if m.message_id == message_id:
                    window[i] = _with_content(m, content)
                    return

    def delete(self, message_ids: Iterable[int]) -> None:
        """Deleted means deleted: drop the messages, and the replies that quoted them, from every window."""
        ids = set(message_ids)
        self._drop_where(lambda m: m.message_id in ids or self._built_on(m.message_id, messages=ids))

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget a member's messages and the replies built from their data (or a whole guild's windows)."""
        for key in [k for k in self._channels if k[0] == guild_id]:
            if user_id is None:
                for m in self._channels.pop(key):
                    self._sources.pop(m.message_id, None)
        if user_id is not None:
            self._drop_where(
                lambda m: (
                    m.guild_id == guild_id
                    and (m.author_id == user_id or self._built_on(m.message_id, members={user_id}))
                )
            )
            self._unmention(guild_id, user_id)

    def _built_on(
        self, reply_id: int, *, members: AbstractSet[int] = frozenset(), messages: AbstractSet[int] = frozenset()
    ) -> bool:
        sources = self._sources.get(reply_id)
        return sources is not None and bool(sources[0] & members or sources[1] & messages)

    def _drop_where(self, doomed: Callable[[IncomingMessage], bool]) -> None:
        for key, window in list(self._channels.items()):
            gone = [m.message_id for m in window if doomed(m)]
            if gone:
                self._channels[key] = deque((m for m in window if m.message_id not in gone), maxlen=KEEP_PER_CHANNEL)
                for message_id in gone:
                    self._sources.pop(message_id, None)

    def _unmention(self, guild_id: int, user_id: int) -> None:
        """Others' lines keep their words but no longer say who a forgotten member was (as in the database)."""
        marks = (f"<@{user_id}>", f"<@!{user_id}>")
        for key, window in list(self._channels.items()):
            if key[0] == guild_id and any(user_id in m.mentioned_user_ids or marks[0] in m.content for m in window):
                self._channels[key] = deque((_unmentioned(m, user_id) for m in window), maxlen=KEEP_PER_CHANNEL)

    def recent(
        self, guild_id: int, channel_id: int, *, budget_tokens: int, before: int | None = None
    ) -> list[ChatLine]:
        """The channel's latest messages (oldest first) within the budget; the newest six always included."""
        messages = list(self._channels.get((guild_id, channel_id), ()))
        if before is not None:
            messages = [m for m in messages if m.message_id != before]
        kept: list[IncomingMessage] = []
        used = 0
        for m in reversed(messages):
            cost = estimate_tokens(m.content) + 12
            if len(kept) >= MIN_MESSAGES and used + cost > budget_tokens:
                break
            kept.append(m)
            used += cost
        return [ChatLine(m.created_at, m.author_id, m.author_name, m.content) for m in reversed(kept)]


def _unmentioned(message: IncomingMessage, user_id: int) -> IncomingMessage:
    return unmentioned(message, lambda mentioned: mentioned == user_id)


def _with_content(message: IncomingMessage, content: str) -> IncomingMessage:
    return replace(message, content=content)
