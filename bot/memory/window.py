"""The recent conversation of each channel, in memory: what a chat reply sees of "the room".

Kept from ingestion (so it includes what the write-behind queue has not stored yet) and trimmed to a token
budget when read: newest first, the last exchanges always kept, older ones dropped first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import replace

from cachetools import LRUCache

from bot.llm.prompts import ChatLine
from bot.llm.tokens import estimate_tokens
from bot.memory.types import IncomingMessage

KEEP_PER_CHANNEL = 60
MIN_MESSAGES = 6  # the last three exchanges (a message and its answer each) always fit


class ChannelWindow:
    """The last messages per channel; deletes and edits apply here too."""

    def __init__(self, channels: int = 5000) -> None:
        self._channels: LRUCache[tuple[int, int], deque[IncomingMessage]] = LRUCache(channels)

    def add(self, message: IncomingMessage) -> None:
        """Remember a message in its channel's window."""
        key = (message.guild_id, message.channel_id)
        window = self._channels.get(key)
        if window is None:
            window = self._channels[key] = deque(maxlen=KEEP_PER_CHANNEL)
        window.append(message)

    def edit(self, message_id: int, content: str) -> None:
        """Apply an edit wherever the message is."""
        for window in self._channels.values():
            for i, m in enumerate(window):
                if m.message_id == message_id:
                    window[i] = _with_content(m, content)
                    return

    def delete(self, message_ids: Iterable[int]) -> None:
        """Deleted means deleted: drop the messages from every window."""
        ids = set(message_ids)
        for key, window in list(self._channels.items()):
            if any(m.message_id in ids for m in window):
                self._channels[key] = deque((m for m in window if m.message_id not in ids), maxlen=KEEP_PER_CHANNEL)

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget a member's messages (or a whole guild's) after a purge."""
        for key in [k for k in self._channels if k[0] == guild_id]:
            if user_id is None:
                del self._channels[key]
            else:
                self._channels[key] = deque(
                    (m for m in self._channels[key] if m.author_id != user_id), maxlen=KEEP_PER_CHANNEL
                )

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


def _with_content(message: IncomingMessage, content: str) -> IncomingMessage:
    return replace(message, content=content)
