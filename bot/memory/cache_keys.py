"""Dropping a guild's (or one member's) entries from caches keyed by (guild_id, user_id or day, …)."""

from __future__ import annotations

from collections.abc import Hashable, MutableMapping
from typing import Any


def drop_entries(cache: MutableMapping[Any, Any], guild_id: int, user_id: int | None = None) -> None:
    """Remove keys whose first part is `guild_id` (and, if given, whose second part is `user_id`)."""
    doomed: list[Hashable] = [
        key for key in list(cache.keys()) if key[0] == guild_id and (user_id is None or key[1] == user_id)
    ]
    for key in doomed:
        cache.pop(key, None)
