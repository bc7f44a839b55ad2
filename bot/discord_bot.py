"""The discord.py Bot: intents, safe defaults, Cogs loaded in setup_hook, command tree sync."""

from __future__ import annotations

import logging

import discord
from discord.ext import commands

from bot.memory.manager import MemoryManager
from bot.responder import Responder
from bot.settings import Settings

log = logging.getLogger(__name__)


def intents() -> discord.Intents:
    """Guilds, members and message content: what a memory bot needs, nothing more."""
    wanted = discord.Intents.default()
    wanted.message_content = True
    wanted.members = True
    wanted.presences = False
    return wanted


class ElefantBot(commands.Bot):
    """The bot; long-lived resources are opened by the caller and passed in."""

    def __init__(
        self, *, memory: MemoryManager, responder: Responder, settings: Settings, sync_commands: bool = True
    ) -> None:
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents(),
            allowed_mentions=discord.AllowedMentions.none(),
            help_command=None,
        )
        self.memory = memory
        self.responder = responder
        self.settings = settings
        self._sync_commands = sync_commands

    async def setup_hook(self) -> None:
        """Load the Cogs and sync slash commands (to the development guild when one is set)."""
        from bot.cogs.admin import AdminCommands
        from bot.cogs.listener import Listener
        from bot.cogs.memory import MemoryCommands
        from bot.cogs.replies import on_app_command_error

        await self.add_cog(Listener(self))
        await self.add_cog(MemoryCommands(self))
        await self.add_cog(AdminCommands(self))
        self.tree.on_error = on_app_command_error  # type: ignore[method-assign]
        if not self._sync_commands:
            return
        if self.settings.dev_guild_id:
            guild = discord.Object(id=self.settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        elif self.application_id:
            await self.tree.sync()

    async def on_message(self, message: discord.Message, /) -> None:
        """No prefix commands: the listener Cog handles messages, slash commands handle the rest."""

    async def on_ready(self) -> None:
        """Log who we are once connected."""
        log.info("connected as %s (%s) to %d guilds", self.user, getattr(self.user, "id", "?"), len(self.guilds))
