"""Embeddings by content hash: an LRU, then SQL (embeddings table), then the model for what is missing."""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Sequence

from cachetools import LRUCache
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.embeddings import Embedder, Task
from bot.memory.caches import drop_entries
from bot.memory.clock import Clock
from db import vectors as store


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 for an empty or zero vector."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class Vectors:
    """Embeds texts once: what was embedded before (by any process) is read back, not paid for again."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], embedder: Embedder, clock: Clock) -> None:
        self._sessions = sessions
        self._embedder = embedder
        self._clock = clock
        self._recent: LRUCache[tuple[int, str], list[float]] = LRUCache(20_000)
        self.model_calls = 0

    def drop(self, guild_id: int) -> None:
        """Forget a guild's cached vectors (its rows go with every deletion: db/deletion.py)."""
        drop_entries(self._recent, guild_id)

    async def vectors(
        self,
        guild_id: int,
        texts: list[str],
        *,
        task: Task = "RETRIEVAL_DOCUMENT",
    ) -> list[list[float]]:
        """One vector per text, in order."""
        keys = [(guild_id, content_hash(f"{task}:{t}")) for t in texts]
        missing = [k for _, k in dict.fromkeys(keys) if (guild_id, k) not in self._recent]
        if missing:
            async with self._sessions() as session:
                for key, blob in (await store.load(session, guild_id, self._embedder.model, missing)).items():
                    self._recent[(guild_id, key)] = array("f", blob).tolist()
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._recent}
        if todo:
            self.model_calls += 1
            fresh = await self._embedder.embed(list(todo.values()), task=task)
            for key, vector in zip(todo, fresh, strict=True):
                self._recent[key] = vector
            async with self._sessions() as session, session.begin():
                await store.save(
                    session,
                    guild_id,
                    self._embedder.model,
                    {key[1]: array("f", v).tobytes() for key, v in zip(todo, fresh, strict=True)},
                    at=self._clock.now(),
                )
        return [self._recent[k] for k in keys]
