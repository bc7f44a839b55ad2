"""The link that adds the bot to a server: its scopes, the channel permissions it needs, its application id.

Apart from the running bot: `python -m bot invite` reads the id from a token and refuses a wrong one without
importing discord.py (only the link itself is built with it).
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import discord

SCOPES = ("bot", "applications.commands")
# What the bot does in channels, as the developer portal and server settings name it: read channels and their
# history (a reply points at the message it answers), reply there and in threads (typing needs Send Messages).
PERMISSIONS = {
    "view_channel": "View Channels",
    "read_message_history": "Read Message History",
    "send_messages": "Send Messages",
    "send_messages_in_threads": "Send Messages in Threads",
}


def needed_permissions() -> discord.Permissions:
    """The channel permissions the bot needs (slash commands and their private answers need none)."""
    import discord

    return discord.Permissions(**dict.fromkeys(PERMISSIONS, True))


def application_id_from_token(token: str) -> int | None:
    """A bot token starts with its bot user's ID in base64, which for bots is the application's ID."""
    head = token.split(".", 1)[0]
    try:
        decoded = base64.b64decode(head + "=" * (-len(head) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    return int(decoded) if decoded.isdigit() else None


def invite_url(application_id: int) -> str:
    """The OAuth2 URL that adds the bot to a server with its slash commands and the permissions it needs."""
    import discord

    return discord.utils.oauth_url(application_id, permissions=needed_permissions(), scopes=SCOPES)
