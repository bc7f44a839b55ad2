"""The messages waiting to be embedded: bounded per guild, newest first, the oldest let go to the backlog scan.

Under more messages than the CPU can embed, waiting in arrival order would make every new vector as late as the
queue is long, and the queue would grow without end. So each guild keeps at most PER_GUILD texts; a batch takes
the newest of each guild in turn; past the bound the oldest text is dropped here — not lost: a message without a
vector is what the worker's backlog scan looks for once nothing new waits (the vector is derived data, recomputed
from the stored text), and recall answers on words alone for it meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

log = logging.getLogger(__name__)
PER_GUILD = 5_000
REPORT_SECONDS = 60.0  # how often the count of texts let go is logged while it grows


@dataclass(frozen=True, slots=True)
class Pending:
    """A message to embed, with who wrote it when (the index keeps to members and times by them)."""

    message_id: int
    guild_id: int
    text: str
    user_id: int
    at: float  # POSIX seconds


class PendingTexts:
    """Texts to embed, per guild, at most `per_guild` each; `take` gives the newest first."""

    def __init__(self, per_guild: int | None = None) -> None:
        self._per_guild = per_guild or PER_GUILD
        self._guilds: dict[int, deque[Pending]] = {}
        self._size = 0
        self.dropped = 0  # texts let go to the backlog scan since start
        self._reported = -REPORT_SECONDS  # time.monotonic() when it was last logged

    def __len__(self) -> int:
        return self._size

    def add(self, pending: Pending) -> bool:
        """Queue a text; False when the guild was full and its oldest text was let go for it."""
        texts = self._guilds.setdefault(pending.guild_id, deque())
        texts.append(pending)
        self._size += 1
        if len(texts) <= self._per_guild:
            return True
        texts.popleft()
        self._size -= 1
        self.dropped += 1
        self._report()
        return False

    def take(self, count: int) -> list[Pending]:
        """Up to `count` texts, the newest of each guild in turn (a busy guild does not hold up a quiet one)."""
        batch: list[Pending] = []
        while len(batch) < count and self._guilds:
            for guild_id in list(self._guilds):
                texts = self._guilds[guild_id]
                batch.append(texts.pop())
                if not texts:
                    del self._guilds[guild_id]
                if len(batch) == count:
                    break
        self._size -= len(batch)
        return batch

    def forget(self, guild_id: int) -> None:
        """Drop the guild's texts (they were deleted or rewritten; the backlog scan finds what is still stored)."""
        self._size -= len(self._guilds.pop(guild_id, ()))

    def _report(self) -> None:
        now = time.monotonic()
        if now - self._reported >= REPORT_SECONDS:
            log.warning(
                "embedding falls behind: %d waiting, %d older messages left to the backlog scan since start "
                "(recall uses their words only until then)",
                self._size,
                self.dropped,
            )
            self._reported = now
