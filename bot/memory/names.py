"""Display names: resolving a typed name to members, and rendering IDs as names for prompts and replies."""

from __future__ import annotations

import re

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.models import MemberName

MENTION = re.compile(r"<@!?(\d{15,20})>")


class NameDirectory:
    """Looks members up by name in `member_names` (kept current by ingestion)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """User IDs whose display name or username equals `name` (case-insensitive); several = ambiguous."""
        wanted = name.strip().lstrip("@").casefold()
        if not wanted:
            return []
        async with self._sessions() as session:
            rows = await session.scalars(
                select(MemberName.user_id).where(
                    MemberName.guild_id == guild_id,
                    or_(func.lower(MemberName.display_name) == wanted, func.lower(MemberName.username) == wanted),
                )
            )
            return sorted(set(rows.all()))

    async def names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names for `user_ids`; unknown IDs are left out."""
        if not user_ids:
            return {}
        async with self._sessions() as session:
            rows = await session.execute(
                select(MemberName.user_id, MemberName.display_name).where(
                    MemberName.guild_id == guild_id, MemberName.user_id.in_(user_ids)
                )
            )
            return {user_id: name for user_id, name in rows}

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
