"""Directory: who is who and when it is — members' names (never pings), the guild's clock and zone, and the
channel's own latest lines. Front ends use it to show memory to people; nothing here changes memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from bot.llm.prompts import ChatLine
from bot.memory.choices import Choices
from bot.memory.clock import Clock
from bot.memory.intake.window import ChannelWindow
from bot.memory.names import NameDirectory


class Directory:
    """Names, time and recent lines, read-only."""

    def __init__(self, names: NameDirectory, *, choices: Choices, clock: Clock, window: ChannelWindow) -> None:
        self._names = names
        self._choices = choices
        self._clock = clock
        self._window = window

    def now(self) -> datetime:
        """The memory's clock (a fake one in the console and tests)."""
        return self._clock.now()

    def zone(self, guild_id: int) -> str:
        """The guild's time zone: its own setting, else DEFAULT_TIMEZONE."""
        return self._choices.zone(guild_id)

    def note_name(self, guild_id: int, user_id: int, display_name: str, username: str | None = None) -> None:
        """Know a member's name before any message of theirs is stored (console, tests)."""
        self._names.note(guild_id, user_id, display_name, username)

    async def name(self, guild_id: int, user_id: int) -> str:
        """A member's display name, or a neutral placeholder that never pings."""
        return await self._names.name(guild_id, user_id)

    async def display_names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names of the members that have one."""
        return await self._names.names(guild_id, user_ids)

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """Members called `name` (display name or username, in any case and script); several: ambiguous."""
        return await self._names.resolve(guild_id, name)

    async def resolve_all(self, guild_id: int, names: list[str]) -> dict[str, list[int]]:
        """`resolve` of several names at once: name -> user IDs."""
        return await self._names.resolve_all(guild_id, names)

    async def render_mentions(self, guild_id: int, text: str, *, at: bool = True) -> str:
        """`<@id>` written as names, so nothing shown or sent pings anyone."""
        return await self._names.render_mentions(guild_id, text, at=at)

    async def render_all_mentions(
        self, guild_id: int, texts: list[str], *, at: bool = True, also: Mapping[int, str] | None = None
    ) -> list[str]:
        """`render_mentions` of many texts, with one lookup of the names (`also`: names known without asking)."""
        return await self._names.render_all(guild_id, texts, at=at, also=also)

    def channel_lines(
        self, guild_id: int, channel_id: int, *, budget_tokens: int, before: int | None = None
    ) -> list[ChatLine]:
        """The channel's own latest messages within a token budget (a private channel's talk stays in it)."""
        return self._window.recent(guild_id, channel_id, budget_tokens=budget_tokens, before=before)
