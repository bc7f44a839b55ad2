"""Per-guild choices that every stage consults: who opted out of being stored (now, and the spans they were opted out
before), who asked to be forgotten, and each guild's time zone.

They are read once at start and kept in memory, because ingestion asks about them for every message and every day
boundary asks for a zone; a change here or in another process reloads them (bot/memory/changes.py). The batch that
writes a message asks the same of the database inside its transaction (db/tombstones.py); asking here first keeps
what no way in may store out of the window of recent lines too. This is the one owner of `zone()`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.clock import Clock
from db import members, tombstones
from db.mentions import unmentioned
from db.records import IncomingMessage
from db.tombstones import member_key

Spans = dict[tuple[int, int], tuple[tuple[datetime, datetime], ...]]


class Choices:
    """Opt-outs, forgotten members and time zones of every guild, as stored."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], clock: Clock, *, default_zone: str) -> None:
        self._sessions = sessions
        self._clock = clock
        self._default_zone = default_zone
        self._optouts: set[tuple[int, int]] = set()
        # Members are named by their tombstones' digest here, as in the database: no list of ids in memory either.
        self._spans: Spans = {}  # (guild, member's digest) -> closed opt-out spans
        self._forgotten: dict[tuple[int, int], datetime] = {}  # (guild, member's digest) -> forgotten up to
        self._zones: dict[int, str] = {}

    async def load(self) -> None:
        """Read every guild's choices again (at start, and after another process changed one)."""
        async with self._sessions() as session:
            self._optouts = await members.optouts(session)
            self._spans = await members.optout_spans(session)
            self._forgotten = await tombstones.forgotten(session)
            self._zones = await members.zones(session)

    def zone(self, guild_id: int) -> str:
        """The guild's time zone: its own setting, else DEFAULT_TIMEZONE."""
        return self._zones.get(guild_id, self._default_zone)

    def opted_out(self, guild_id: int, user_id: int) -> bool:
        """Whether the member asked not to be stored in this guild (now)."""
        return (guild_id, user_id) in self._optouts

    def withheld(self, message: IncomingMessage) -> bool:
        """Whether no way in may store the message: its author is opted out, was when they said it, or was
        forgotten after they said it."""
        if (message.guild_id, message.author_id) in self._optouts:
            return True
        if not self._spans and not self._forgotten:  # the common case: nothing to compute
            return False
        key, at = (message.guild_id, member_key(message.guild_id, message.author_id)), _aware(message.created_at)
        limit = self._forgotten.get(key)
        return (limit is not None and at <= limit) or any(s <= at <= u for s, u in self._spans.get(key, ()))

    def unmentioned(self, message: IncomingMessage) -> IncomingMessage:
        """The message without the mentions of members forgotten after it was said (as the database keeps it)."""
        if not self._forgotten or "<@" not in message.content:
            return message
        at = _aware(message.edited_at or message.created_at)

        def gone(user_id: int) -> bool:
            limit = self._forgotten.get((message.guild_id, member_key(message.guild_id, user_id)))
            return limit is not None and at <= limit

        return unmentioned(message, gone)

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
        """Store the member's messages again; what they said while opted out stays unstored."""
        async with self._sessions() as session, session.begin():
            await members.opt_in(session, guild_id, user_id, at=self._clock.now())
        await self.load()  # the span just closed (in memory only once it is stored: until then, opted out)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
