"""`/memory-admin`: statistics, purges, reverting facts, channel scoping and the server's time zone.

Discord applies `default_permissions` only to top-level commands, so the admin commands are their own
top-level group carrying Manage Server (hidden from others by default), and every one of them also refuses
at run time (Discord does not enforce the default; server owners can change it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import date
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo, available_timezones

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.replies import Confirm, answer, require_admin
from bot.memory.admin import rows_in_words
from bot.memory.caches import CacheReport
from bot.memory.clock import day_bounds
from bot.memory.facts.store import RevisionNotFoundError

if TYPE_CHECKING:
    from bot.discord_bot import ElefantBot

ZONES = sorted(available_timezones())
CHANNEL_MODES = {
    "include": "its messages feed summaries and contexts everywhere, even if @everyone cannot read it",
    "exclude": "its messages stay in that channel's own conversation and never feed summaries or contexts",
    "auto": "follow Discord: private channels (that @everyone cannot read) stay to themselves",
}


def size(n: int) -> str:
    """Bytes for people."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def cache_line(name: str, report: CacheReport) -> str:
    rate = "no lookups yet" if report.hit_rate is None else f"{report.hit_rate:.0%} of {report.hits + report.misses:,}"
    return f"{name} {rate}"


def stats_text(figures: dict[str, int], caches: dict[str, CacheReport]) -> str:
    """The /memory-admin stats answer."""
    lines = [
        "**Memory in this server**",
        f"Messages stored: {figures['messages']:,} from {figures['members_seen']:,} members; "
        f"facts about {figures['members_with_facts']:,} members",
        f"Summaries: {figures['daily_summaries']:,} daily, {figures['historical_summaries']:,} weekly, "
        f"{figures.get('rollups', 0):,} rollups",
        f"Records no database would take (kept aside, see the logs): {figures.get('dead_letters', 0):,}",
        f"Model, last 24 h: {figures['llm_calls_24h']:,} calls, {figures['llm_tokens_24h']:,} tokens, "
        f"{figures['llm_errors_24h']:,} errors or skips",
        "Cache hit rates since start: " + (" · ".join(cache_line(n, r) for n, r in caches.items()) or "none"),
        f"Database size (all servers): {size(figures['database_bytes'])}",
    ]
    return "\n".join(lines)


@app_commands.guild_only()
@app_commands.default_permissions(manage_guild=True)
class AdminCommands(
    commands.GroupCog, group_name="memory-admin", group_description="Manage what Elefant remembers in this server"
):
    """Admin-only: every command here needs Manage Server, checked by Discord's default and again at run time."""

    purge = app_commands.Group(name="purge", description="Delete stored data for real (asks first)")

    def __init__(self, bot: ElefantBot) -> None:
        self.bot = bot
        # Only the faces these commands use (bot/memory/manager.py hands them out).
        self._admin = bot.memory.admin
        self._facts = bot.memory.facts
        self._directory = bot.memory.directory
        super().__init__()

    async def interaction_check(self, interaction: discord.Interaction) -> bool:  # type: ignore[override]
        """Runs before every command of the group, subgroups included."""
        return require_admin(interaction)

    @app_commands.command(name="stats", description="What is stored, what the model cost, how the caches do")
    async def stats(self, interaction: discord.Interaction) -> None:
        assert interaction.guild_id is not None
        await interaction.response.defer(ephemeral=True, thinking=True)
        figures = await self._admin.stats(interaction.guild_id)
        await answer(interaction, stats_text(figures, self._admin.cache_reports()))

    async def _confirm_purge(
        self, interaction: discord.Interaction, what: str, work: Callable[[int], Awaitable[Counter[str]]]
    ) -> None:
        """Ask first; on yes, run `work` on the guild and say what it deleted."""
        guild_id = interaction.guild_id
        assert guild_id is not None

        async def run() -> str:
            return f"Deleted {what}: {rows_in_words(await work(guild_id))}."

        view = Confirm(interaction.user.id, run, yes="Delete", no="Cancel")
        await answer(
            interaction,
            f"Delete {what}? This removes the messages and every summary built from them, "
            "from the database and from my caches. It cannot be undone.",
            view=view,
        )

    @purge.command(name="user", description="Everything kept about one member")
    async def purge_user(self, interaction: discord.Interaction, user: discord.User) -> None:
        what = f"everything about {user.display_name} in this server"
        await self._confirm_purge(interaction, what, lambda guild: self._admin.forget_member(guild, user.id))

    @purge.command(name="channel", description="A channel's stored messages")
    async def purge_channel(
        self, interaction: discord.Interaction, channel: discord.TextChannel | discord.Thread | discord.VoiceChannel
    ) -> None:
        what = f"the stored messages of #{channel.name}"
        await self._confirm_purge(interaction, what, lambda guild: self._admin.purge_channel(guild, channel.id))

    @purge.command(name="before", description="Every stored message before a date")
    @app_commands.describe(day="YYYY-MM-DD; messages before that day starts in the server's time zone go")
    async def purge_before(self, interaction: discord.Interaction, day: str) -> None:
        assert interaction.guild_id is not None
        guild_id = interaction.guild_id
        try:
            cutoff_day = date.fromisoformat(day.strip())
        except ValueError:
            await answer(
                interaction,
                f"“{day}” is not a date I can read. Please write it as YYYY-MM-DD, "
                "e.g. 2026-01-31. Nothing was deleted.",
            )
            return
        zone = self._directory.zone(guild_id)
        cutoff, _ = day_bounds(cutoff_day, zone)
        what = f"every message before {cutoff_day} ({zone})"
        await self._confirm_purge(interaction, what, lambda guild: self._admin.purge_before(guild, cutoff))

    @purge.command(name="all", description="Everything kept about this server")
    async def purge_all(self, interaction: discord.Interaction) -> None:
        what = "everything I keep about this server (messages, facts, summaries, settings)"
        await self._confirm_purge(interaction, what, self._admin.purge_guild)

    @app_commands.command(name="revert", description="Undo one change to a member's facts")
    @app_commands.describe(revision="The number from /memory history")
    async def revert(
        self, interaction: discord.Interaction, user: discord.User, revision: app_commands.Range[int, 1]
    ) -> None:
        assert interaction.guild_id is not None
        await interaction.response.defer(ephemeral=True, thinking=True)  # Discord waits 3 s; the database may not
        try:
            change = await self._facts.revert(interaction.guild_id, user.id, revision, requested_by=interaction.user.id)
        except RevisionNotFoundError:
            await answer(
                interaction,
                f"There is no revision #{revision} for {user.display_name}; "
                "`/memory history` lists them. Nothing was changed.",
            )
            return
        if not change.changed:
            await answer(interaction, f"Reverting #{revision} changes nothing: the facts are already like that.")
            return
        now = await self._directory.render_mentions(interaction.guild_id, change.after, at=False)
        await answer(
            interaction,
            f"Undid revision #{revision} (as revision #{change.revision_id}). "
            f"What I know about {user.display_name} now:\n{now or '*nothing*'}",
        )

    @app_commands.command(name="channel", description="Whether a channel's messages may feed memory elsewhere")
    async def channel(
        self,
        interaction: discord.Interaction,
        channel: discord.TextChannel | discord.Thread | discord.VoiceChannel,
        mode: Literal["include", "exclude", "auto"],
    ) -> None:
        assert interaction.guild_id is not None
        await interaction.response.defer(ephemeral=True, thinking=True)  # dropping summaries can take a while
        dropped = await self._admin.set_channel_mode(interaction.guild_id, channel.id, mode)
        note = f" Dropped {rows_in_words(dropped)} built under the old rule; rebuilt when needed." if dropped else ""
        await answer(interaction, f"#{channel.name} is now **{mode}**: {CHANNEL_MODES[mode]}.{note}")

    @app_commands.command(name="timezone", description="The server's time zone, which decides where days begin")
    @app_commands.describe(zone="An IANA name such as Europe/Berlin; leave empty to see the current one")
    async def timezone(self, interaction: discord.Interaction, zone: str | None = None) -> None:
        assert interaction.guild_id is not None
        current = self._directory.zone(interaction.guild_id)
        if zone is None:
            await answer(interaction, f"Days here begin at midnight in **{current}**.")
            return
        zone = zone.strip()
        if zone not in ZONES:
            await answer(
                interaction,
                f"“{zone}” is not a time zone I know; pick one from the list, e.g. "
                f"Europe/Berlin or America/New_York. It is still {current}.",
            )
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        await self._admin.set_timezone(interaction.guild_id, zone)
        await answer(interaction, f"Days here now begin at midnight in **{ZoneInfo(zone).key}** (was {current}).")

    @timezone.autocomplete("zone")
    async def _zones(self, interaction: discord.Interaction, typed: str) -> list[app_commands.Choice[str]]:
        needle = typed.strip().lower().replace(" ", "_")
        return [app_commands.Choice(name=z, value=z) for z in ZONES if needle in z.lower()][:25]
