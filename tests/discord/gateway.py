"""Gateway payloads (THREAD_CREATE, MESSAGE_CREATE) as Discord sends them, fed to discord.py's own parsers.

dpytest simulates guilds, text channels and members, but not threads, system messages, stickers or forwards;
these builders write the dicts the Discord API documents and hand them to the connection state, so the bot
receives real `discord.Thread` and `discord.Message` objects through discord.py's real code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import discord
from discord.ext.test import backend, factories

# Current snowflakes: discord.py dates a message by its id, and memory reads "today" from the real clock.
_last = [discord.utils.time_snowflake(datetime.now(UTC))]


def snowflake() -> int:
    """The next id, dated now as Discord's are (a member's message after a forget-me is newer than it)."""
    _last[0] = max(_last[0] + 1, discord.utils.time_snowflake(datetime.now(UTC)))
    return _last[0]


async def discord_logs_from(
    self: Any, channel_id: int, limit: int, before: int | None = None, after: int | None = None, around: Any = None
) -> list[dict[str, Any]]:
    """dpytest's `logs_from` as Discord's API answers it: the oldest `limit` messages after `after`, sent newest
    first. (dpytest's own returns the `after` message itself and needs it to exist; discord.py's history then
    reads the same page for ever.) `before` and `around` are not used by catch-up."""
    messages = sorted(backend._cur_config.messages.get(channel_id, []), key=lambda m: int(m["id"]))
    later = [m for m in messages if after is None or int(m["id"]) > after][:limit]
    return list(reversed(later))


def real_snowflakes() -> None:
    """Make dpytest number its objects as Discord does. Its own `make_id` pads a 12-bit counter, so from its
    4,097th id in a process on the ids are dated decades ahead (2038 and later), and memory rightly refuses such
    times into dead letters."""
    factories.make_id = snowflake


def user(member: discord.abc.User) -> dict[str, Any]:
    return {
        "id": str(member.id),
        "username": member.name,
        "global_name": None,
        "discriminator": "0",
        "avatar": None,
        "bot": member.bot,
    }


def thread_create(parent: discord.TextChannel, name: str, *, private: bool, owner: discord.abc.User) -> discord.Thread:
    """A THREAD_CREATE for a new thread under `parent`; returns the Thread discord.py made of it."""
    now = discord.utils.utcnow().isoformat()
    thread_id = snowflake()
    backend.get_state().parse_thread_create(
        {
            "id": str(thread_id),
            "guild_id": str(parent.guild.id),
            "parent_id": str(parent.id),
            "owner_id": str(owner.id),
            "name": name,
            "type": discord.ChannelType.private_thread.value if private else discord.ChannelType.public_thread.value,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": now,
                "locked": False,
                "invitable": not private,
                "create_timestamp": now,
            },
            "newly_created": True,
        }
    )
    thread = parent.guild.get_thread(thread_id)
    assert isinstance(thread, discord.Thread)
    return thread


def attachment(name: str) -> dict[str, Any]:
    file_id = snowflake()
    return {
        "id": str(file_id),
        "filename": name,
        "size": 48_213,
        "url": f"https://cdn.discordapp.com/attachments/1/{file_id}/{name}",
        "proxy_url": f"https://media.discordapp.net/attachments/1/{file_id}/{name}",
    }


def sticker(name: str) -> dict[str, Any]:
    return {"id": str(snowflake()), "name": name, "format_type": 1}


def message_create(
    channel: discord.abc.GuildChannel | discord.Thread,
    author: discord.abc.User,
    content: str = "",
    *,
    type: int = 0,  # the payload's own name (a Discord message type)
    attachments: list[dict[str, Any]] | None = None,
    stickers: list[dict[str, Any]] | None = None,
    reference: dict[str, Any] | None = None,
    snapshot: dict[str, Any] | None = None,
    message_id: int | None = None,
) -> dict[str, Any]:
    """A MESSAGE_CREATE: dispatched through the connection state's parser (on_message follows)."""
    now = discord.utils.utcnow().isoformat()
    data: dict[str, Any] = {
        "id": str(message_id or snowflake()),
        "channel_id": str(channel.id),
        "guild_id": str(channel.guild.id),
        "author": user(author),
        "content": content,
        "timestamp": now,
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": type,
        "flags": 16384 if snapshot is not None else 0,  # HAS_SNAPSHOT
    }
    if isinstance(author, discord.Member):
        data["member"] = {
            "roles": [],
            "nick": author.nick,
            "joined_at": now,
            "deaf": False,
            "mute": False,
            "flags": 0,
        }
    if stickers:
        data["sticker_items"] = stickers
    if reference is not None:
        data["message_reference"] = reference
    if snapshot is not None:
        data["message_snapshots"] = [{"message": snapshot}]
    backend.get_state().parse_message_create(data)
    return data


def snapshot_of(content: str, *, attachments: list[dict[str, Any]] | None = None, stickers=None) -> dict[str, Any]:
    """What a forward carries: the original message's content, files and stickers, not its author."""
    return {
        "type": 0,
        "content": content,
        "embeds": [],
        "attachments": attachments or [],
        "timestamp": discord.utils.utcnow().isoformat(),
        "edited_timestamp": None,
        "flags": 0,
        "mentions": [],
        "mention_roles": [],
        **({"sticker_items": stickers} if stickers else {}),
    }


def forward_reference(message_id: int, channel_id: int, guild_id: int) -> dict[str, Any]:
    return {"type": 1, "message_id": str(message_id), "channel_id": str(channel_id), "guild_id": str(guild_id)}
