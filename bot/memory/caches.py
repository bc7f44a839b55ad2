"""The memory layer's caches: cachetools with hit counting (for /memory stats), and dropping a guild's entries."""

from __future__ import annotations

from collections.abc import Hashable, MutableMapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

from cachetools import LRUCache, TTLCache


@dataclass(frozen=True)
class CacheReport:
    """How one cache has done since start."""

    hits: int
    misses: int
    size: int

    @property
    def hit_rate(self) -> float | None:
        """Hits per lookup, or None before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None


class _Counting:
    """Counts `cache[key]` lookups, the way the memory layer reads its caches."""

    hits = 0
    misses = 0

    def __getitem__(self, key: Any) -> Any:
        try:
            value = super().__getitem__(key)  # type: ignore[misc]
        except KeyError:
            self.misses += 1
            raise
        self.hits += 1
        return value

    def lookup(self, key: Any) -> Any:
        """`cache[key]` counted as a lookup, or None on a miss (for caches that never hold None)."""
        try:
            return self[key]
        except KeyError:
            return None

    def report(self) -> CacheReport:
        return CacheReport(self.hits, self.misses, len(self))  # type: ignore[arg-type]


K = TypeVar("K")
V = TypeVar("V")


class CountingLRU(_Counting, LRUCache[K, V]):
    """An LRU cache that knows its hit rate."""


class CountingTTL(_Counting, TTLCache[K, V]):
    """A TTL cache that knows its hit rate."""


def drop_entries(cache: MutableMapping[Any, Any], guild_id: int, user_id: int | None = None) -> None:
    """Remove keys whose first part is `guild_id` (and, if given, whose second part is `user_id`)."""
    doomed: list[Hashable] = [
        key for key in list(cache.keys()) if key[0] == guild_id and (user_id is None or key[1] == user_id)
    ]
    for key in doomed:
        with suppress(KeyError):  # expired meanwhile
            del cache[key]  # not pop(): that would count as a lookup
