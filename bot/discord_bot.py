"""The discord.py Bot: the intents it needs, safe defaults, Cogs loaded in setup_hook, command sync on change.

Discord as it really behaves: three intents (guilds, guild messages, message content — the last one
privileged) and, only when DISCORD_MEMBERS_INTENT is on, members (privileged too); no member download at
start; slash commands synced when the command tree changed (a hash in DATA_DIR) or on `python -m bot sync`,
since Discord rate-limits syncing; sharding (AutoShardedBot) when SHARD_COUNT is set.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import discord
from discord.ext import commands

from bot.catchup import CatchUp
from bot.faults import Fault
from bot.memory.manager import MemoryManager
from bot.reply.respond import Responder
from bot.settings import Settings

log = logging.getLogger(__name__)
# The bot never joins voice: discord.py's warnings about voice libraries not installed are no news.
discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False
TREE_HASH_FILE = "command-tree.sha256"


def intents(settings: Settings) -> discord.Intents:
    """Only what a memory bot uses: servers and their channels, messages, and their text."""
    wanted = discord.Intents.none()
    wanted.guilds = True  # channels, threads, roles: who may read a channel, Manage Server
    wanted.guild_messages = True  # messages, edits and deletes in servers (DMs are never stored)
    wanted.message_content = True  # privileged: the text of messages that do not mention the bot
    # Privileged and optional: nickname changes at once (otherwise names follow each member's next message).
    wanted.members = settings.discord_members_intent
    return wanted


class _Elefant:
    """What both bot classes share; long-lived resources are opened by the caller and passed in."""

    tree: discord.app_commands.CommandTree[Any]
    application_id: int | None

    catch_up: CatchUp

    def _setup(self, memory: MemoryManager, responder: Responder, settings: Settings, sync_commands: bool) -> None:
        self.memory = memory
        self.responder = responder
        self.settings = settings
        self._sync_commands = sync_commands
        # discord.py reconnects by itself and dispatches "disconnect" at every failed attempt: one line per state.
        self.gateway = Fault("Discord", logger=log, down_word="disconnected", back_word="connected again")

    async def setup_hook(self) -> None:
        """Load the Cogs; sync slash commands if the tree changed since the last sync."""
        from bot.cogs.admin import AdminCommands
        from bot.cogs.listener import Listener
        from bot.cogs.memory import MemoryCommands
        from bot.cogs.replies import on_app_command_error

        bot: Any = self
        listener = Listener(bot, self.memory.intake, self.memory.recollection)
        await bot.add_cog(listener)
        self.catch_up = CatchUp(
            bot,
            listener.store_fetched,
            self.memory.intake,
            hours=self.settings.catchup_hours,
            verify_hours=self.settings.catchup_verify_hours,
        )
        await bot.add_cog(MemoryCommands(bot))
        await bot.add_cog(AdminCommands(bot))
        self.tree.on_error = on_app_command_error  # type: ignore[method-assign]
        if self._sync_commands:
            await self.sync_commands(force=False)

    def tree_hash(self) -> str:
        """What a sync would send (and where to), as a hash: equal hashes need no new sync."""
        payload = {
            "application": self.application_id,
            "guild": self.settings.dev_guild_id,
            "commands": sorted(
                (command.to_dict(self.tree) for command in self.tree.get_commands()), key=lambda c: c["name"]
            ),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    @property
    def _hash_file(self) -> Path:
        return self.settings.data_dir / TREE_HASH_FILE

    async def sync_commands(self, *, force: bool) -> bool:
        """Send the command tree to Discord (the development guild when DEV_GUILD_ID is set); True if sent.

        Discord rate-limits syncing and keeps commands between restarts, so unless `force` is given a tree
        whose hash matches the last sync is not sent again.
        """
        if self.application_id is None:
            return False
        digest = self.tree_hash()
        if not force and self._hash_file.is_file() and self._hash_file.read_text().strip() == digest:
            log.info("slash commands unchanged since the last sync; not syncing")
            return False
        if self.settings.dev_guild_id:
            guild = discord.Object(id=self.settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
        else:
            synced = await self.tree.sync()
        self._hash_file.parent.mkdir(parents=True, exist_ok=True)
        self._hash_file.write_text(digest + "\n")
        log.info("synced %d slash commands (%s)", len(synced), self.settings.dev_guild_id or "global")
        return True

    def connected(self) -> bool:
        """Whether the gateway is connected now (every shard's, when sharded): /healthz says not ready otherwise."""
        bot: Any = self
        if bot.is_closed() or not bot.is_ready():
            return False
        shards = getattr(bot, "shards", None)  # AutoShardedBot: one connection per shard
        if shards is not None:
            return all(not shard.is_closed() for shard in shards.values())
        return bot.ws is not None and bool(bot.ws.open)

    async def on_message(self, message: discord.Message, /) -> None:
        """No prefix commands: the listener Cog handles messages, slash commands handle the rest."""

    async def on_ready(self) -> None:
        """Log who we are once connected, and read back what was said while we were away."""
        bot: Any = self
        self._was_ready = True
        if self.gateway.down:
            self.gateway.ok(replayed="new session; reading back what was said meanwhile")
        else:
            log.info("connected as %s (%s) to %d guilds", bot.user, getattr(bot.user, "id", "?"), len(bot.guilds))
        self.catch_up.request()

    async def on_resumed(self) -> None:
        """A resumed session replays missed events, but not past a gap Discord would not resume: read back."""
        self.gateway.ok(replayed="session resumed; reading back what was said meanwhile")
        self.catch_up.request()

    async def on_disconnect(self) -> None:
        """The gateway connection closed; discord.py reconnects by itself (and calls this at each failed try). Before
        the first READY there was no connection to lose: a refused login says its own sentence (bot/start_up.py)."""
        if getattr(self, "_was_ready", False):
            self.gateway.failed("the gateway connection closed; reconnecting")

    async def close(self) -> None:
        """Stop reading history back (what it stored is stored), then disconnect."""
        catching_up = getattr(self, "catch_up", None)
        if catching_up is not None:
            await catching_up.cancel()
        await super().close()  # type: ignore[misc]


def _options(settings: Settings) -> dict[str, Any]:
    wanted = intents(settings)
    return {
        "command_prefix": commands.when_mentioned,
        "intents": wanted,
        "allowed_mentions": discord.AllowedMentions.none(),
        "help_command": None,
        "chunk_guilds_at_startup": False,  # no member download: names come with messages
        "member_cache_flags": discord.MemberCacheFlags.from_intents(wanted),
    }


class ElefantBot(_Elefant, commands.Bot):
    """The bot on one gateway connection (up to a couple of thousand servers)."""

    def __init__(
        self, *, memory: MemoryManager, responder: Responder, settings: Settings, sync_commands: bool = True
    ) -> None:
        super().__init__(**_options(settings))
        self._setup(memory, responder, settings, sync_commands)


class ShardedElefantBot(_Elefant, commands.AutoShardedBot):
    """The bot on several gateway connections (shards): SHARD_COUNT shards, this process running SHARD_IDS."""

    def __init__(
        self, *, memory: MemoryManager, responder: Responder, settings: Settings, sync_commands: bool = True
    ) -> None:
        count = settings.shard_count if isinstance(settings.shard_count, int) else None  # None: Discord's advice
        chosen: dict[str, Any] = {"shard_ids": settings.shard_id_list} if settings.shard_id_list is not None else {}
        super().__init__(**_options(settings), shard_count=count, **chosen)
        self._setup(memory, responder, settings, sync_commands)


def make_bot(
    *, memory: MemoryManager, responder: Responder, settings: Settings, sync_commands: bool = True
) -> ElefantBot | ShardedElefantBot:
    """ElefantBot, or ShardedElefantBot when SHARD_COUNT is set."""
    kind = ShardedElefantBot if settings.shard_count is not None else ElefantBot
    return kind(memory=memory, responder=responder, settings=settings, sync_commands=sync_commands)
