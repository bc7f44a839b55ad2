"""Display names: resolving a typed name to members, and rendering IDs as names for prompts and replies."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from cachetools import LRUCache
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.caches import drop_entries
from bot.text import MENTION
from db import names as store
from db.names import fold

__all__ = ["MENTION", "NameDirectory"]


class NameDirectory:
    """Looks members up by name in `member_names` (kept current by ingestion).

    Ingestion is write-behind, so names seen in the last moments may not be in SQL yet: `note` keeps
    them in a small LRU overlay that answers first.
    """

    def __init__(self, sessions: async_sessionmaker[AsyncSession], *, recent: int = 10_000) -> None:
        self._sessions = sessions
        self._recent: LRUCache[tuple[int, int], tuple[str, str | None]] = LRUCache(maxsize=recent)

    def note(self, guild_id: int, user_id: int, display_name: str, username: str | None) -> None:
        """Remember the name a member was just seen with."""
        self._recent[(guild_id, user_id)] = (display_name, username)

    async def store(
        self, guild_id: int, user_id: int, display_name: str, username: str | None, *, at: datetime
    ) -> None:
        """Write a name straight to `member_names` (name changes are rare; messages go through ingestion)."""
        async with self._sessions() as session, session.begin():
            await store.store(session, guild_id, user_id, display_name, username, at=at)

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget cached names of a member, or of a whole guild (after a purge)."""
        drop_entries(self._recent, guild_id, user_id)

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """User IDs whose display name or username equals `name` (case-insensitive); several = ambiguous."""
        return (await self.resolve_all(guild_id, [name])).get(name, [])

    async def resolve_all(self, guild_id: int, names: list[str]) -> dict[str, list[int]]:
        """`resolve` of several names (the words of a question) with one statement: name -> user IDs."""
        wanted = {name: fold(name.strip().lstrip("@")) for name in names}
        keys = sorted({key for key in wanted.values() if key})
        if not keys:
            return {}
        async with self._sessions() as session:
            stored = await store.matching(session, guild_id, keys)
        for (guild, user_id), known in self._recent.items():
            if guild == guild_id:
                stored[user_id] = known  # the newest name wins, also when it no longer matches
        folded = {user_id: {fold(n) for n in known if n} for user_id, known in stored.items()}
        return {
            name: sorted(u for u, keys_of in folded.items() if key in keys_of) for name, key in wanted.items() if key
        }

    async def names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names for `user_ids`; unknown IDs are left out."""
        if not user_ids:
            return {}
        found = {u: self._recent[(guild_id, u)][0] for u in user_ids if (guild_id, u) in self._recent}
        missing = user_ids - found.keys()
        if missing:
            async with self._sessions() as session:
                found.update(await store.display_names(session, guild_id, missing))
        return found

    async def name(self, guild_id: int, user_id: int) -> str:
        """One display name, or a neutral placeholder that never pings."""
        return (await self.names(guild_id, {user_id})).get(user_id, f"member {str(user_id)[-4:]}")

    async def render_mentions(self, guild_id: int, text: str, *, at: bool = True) -> str:
        """Replace `<@id>` mentions by `@name` (or `name`), so the model sees names and nothing echoes a ping."""
        return (await self.render_all(guild_id, [text], at=at))[0]

    async def render_all(
        self, guild_id: int, texts: list[str], *, at: bool = True, also: Mapping[int, str] | None = None
    ) -> list[str]:
        """`render_mentions` of many texts with one lookup (a chat window mentions the bot in most lines);
        `also`: names known without asking (the bot's own, which is no member's)."""
        ids = {int(m) for text in texts for m in MENTION.findall(text)}
        if not ids:
            return texts
        known = {**await self.names(guild_id, ids - set(also or {})), **(also or {})}
        prefix = "@" if at else ""
        return [
            MENTION.sub(lambda m: prefix + known.get(int(m.group(1)), f"member {m.group(1)[-4:]}"), text)
            for text in texts
        ]
