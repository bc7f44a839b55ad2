"""Per-guild choices that every stage consults: who opted out of being stored, and each guild's time zone.

They are read once at start and kept in memory, because ingestion asks about opt-outs for every message and
every day boundary asks for a zone; a change here or in another process reloads them (bot/memory/changes.py).
This is the one owner of `zone()`.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.clock import Clock
from db import members


class Choices:
    """Opt-outs and time zones of every guild, as stored."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock, *, default_zone: str) -> None:
        self._sessions = sessions
        self._clock = clock
        self._default_zone = default_zone
        self._optouts: set[tuple[int, int]] = set()
        self._zones: dict[int, str] = {}

    async def load(self) -> None:
        """Read every guild's choices again (at start, and after another process changed one)."""
        async with self._sessions() as session:
            self._optouts = await members.optouts(session)
            self._zones = await members.zones(session)

    def zone(self, guild_id: int) -> str:
        """The guild's time zone: its own setting, else DEFAULT_TIMEZONE."""
        return self._zones.get(guild_id, self._default_zone)

    def opted_out(self, guild_id: int, user_id: int) -> bool:
        """Whether the member asked not to be stored in this guild."""
        return (guild_id, user_id) in self._optouts

    async def set_zone(self, guild_id: int, zone: str) -> None:
        """Store a guild's own zone (an IANA name; an unknown one raises before anything changes)."""
        ZoneInfo(zone)
        async with self._sessions() as session, session.begin():
            await members.set_zone(session, guild_id, zone, at=self._clock.now())
        self._zones[guild_id] = zone

    async def opt_out(self, guild_id: int, user_id: int) -> None:
        """Stop storing the member's messages from now on (in memory first: nothing more is queued)."""
        self._optouts.add((guild_id, user_id))
        async with self._sessions() as session, session.begin():
            await members.opt_out(session, guild_id, user_id, at=self._clock.now())

    async def opt_in(self, guild_id: int, user_id: int) -> None:
        """Store the member's messages again."""
        self._optouts.discard((guild_id, user_id))
        async with self._sessions() as session, session.begin():
            await members.opt_in(session, guild_id, user_id)
