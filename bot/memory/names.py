"""Display names: resolving a typed name to members, and rendering IDs as names for prompts and replies."""

from __future__ import annotations

import re
from datetime import datetime

from cachetools import LRUCache
from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.caches import drop_entries
from db.models import MemberName

MENTION = re.compile(r"<@!?(\d{15,20})>")


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
            await session.merge(
                MemberName(
                    guild_id=guild_id,
                    user_id=user_id,
                    display_name=display_name[:100],
                    username=username,
                    updated_at=at,
                )
            )

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget cached names of a member, or of a whole guild (after a purge)."""
        drop_entries(self._recent, guild_id, user_id)

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """User IDs whose display name or username equals `name` (case-insensitive); several = ambiguous."""
        wanted = name.strip().lstrip("@").casefold()
        if not wanted:
            return []
        async with self._sessions() as session:
            rows = await session.execute(
                select(MemberName.user_id, MemberName.display_name, MemberName.username).where(
                    MemberName.guild_id == guild_id,
                    or_(func.lower(MemberName.display_name) == wanted, func.lower(MemberName.username) == wanted),
                )
            )
            stored = {user_id: (display, username) for user_id, display, username in rows}
        for (guild, user_id), names in self._recent.items():
            if guild == guild_id:
                stored[user_id] = names  # the newest name wins, also when it no longer matches
        return sorted(u for u, names in stored.items() if any(n and n.casefold() == wanted for n in names))

    async def names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names for `user_ids`; unknown IDs are left out."""
        if not user_ids:
            return {}
        found = {u: self._recent[(guild_id, u)][0] for u in user_ids if (guild_id, u) in self._recent}
        missing = user_ids - found.keys()
        if missing:
            async with self._sessions() as session:
                rows = await session.execute(
                    select(MemberName.user_id, MemberName.display_name).where(
                        MemberName.guild_id == guild_id, MemberName.user_id.in_(missing)
                    )
                )
                found.update({user_id: name for user_id, name in rows})
        return found

    async def name(self, guild_id: int, user_id: int) -> str:
        """One display name, or a neutral placeholder that never pings."""
        return (await self.names(guild_id, {user_id})).get(user_id, f"member {str(user_id)[-4:]}")

    async def render_mentions(self, guild_id: int, text: str, *, at: bool = True) -> str:
        """Replace `<@id>` mentions by `@name` (or `name`), so the model sees names and nothing echoes a ping."""
        ids = {int(m) for m in MENTION.findall(text)}
        if not ids:
            return text
        known = await self.names(guild_id, ids)
        prefix = "@" if at else ""
        return MENTION.sub(lambda m: prefix + known.get(int(m.group(1)), f"member {m.group(1)[-4:]}"), text)
