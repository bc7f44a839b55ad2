"""Driving slash commands and buttons through discord.py's real command tree and view store.

dpytest has no interactions, so (as the field notes describe) a raw INTERACTION_CREATE payload goes to the
connection state's `parse_interaction_create`, and the webhook adapter that would talk to Discord's HTTP API
is replaced by one that records each request and answers like Discord does. Everything between (option
parsing, transformers, checks, error handlers, InteractionResponse, followups, views) is discord.py's own.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import discord
from discord.webhook import async_ as webhook_async

EPHEMERAL = 64
MEMBER_PERMISSIONS = discord.Permissions(read_messages=True, send_messages=True, use_application_commands=True)
ADMIN_PERMISSIONS = discord.Permissions(MEMBER_PERMISSIONS.value | discord.Permissions(manage_guild=True).value)


def snowflake() -> int:
    """A current snowflake: discord.py treats interactions with old IDs as expired."""
    snowflake.last = max(getattr(snowflake, "last", 0) + 1, discord.utils.time_snowflake(discord.utils.utcnow()))
    return snowflake.last


@dataclass
class Sent:
    """One message (or edit) the bot sent in answer to an interaction."""

    kind: str  # "response", "update", "followup" or "edit"
    message_id: int
    content: str
    flags: int = 0
    buttons: dict[str, str] = field(default_factory=dict)  # label -> custom_id
    disabled: frozenset[str] = frozenset()  # labels of buttons shown greyed out
    files: dict[str, bytes] = field(default_factory=dict)
    allowed_mentions: dict[str, Any] | None = None

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & EPHEMERAL)


def _buttons(components: list[dict[str, Any]] | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for row in components or []:
        for item in row.get("components", []):
            if item.get("type") == 2 and "custom_id" in item:
                found[item["label"]] = item["custom_id"]
    return found


def _disabled(components: list[dict[str, Any]] | None) -> frozenset[str]:
    return frozenset(
        item["label"] for row in components or [] for item in row.get("components", []) if item.get("disabled")
    )


class RecordingAdapter(webhook_async.AsyncWebhookAdapter):
    """Answers interaction callbacks and webhook calls like Discord would, and records what was sent."""

    def __init__(self, bot: discord.Client, channel_id: int) -> None:
        super().__init__()
        self.bot = bot
        self.channel_id = channel_id
        self.sent: list[Sent] = []
        self.original: dict[str, int] = {}  # interaction token -> its response message
        self.flags: dict[str, int] = {}
        self.choices: list[dict[str, Any]] = []  # autocomplete answers
        self.events: list[str] = []  # "defer" / "respond" as Discord receives them (others may add theirs)

    def _message(self, message_id: int, body: dict[str, Any]) -> dict[str, Any]:
        assert self.bot.user is not None
        return {
            "id": str(message_id),
            "channel_id": str(self.channel_id),
            "type": 0,
            "content": body.get("content") or "",
            "author": {
                "id": str(self.bot.user.id),
                "username": self.bot.user.name,
                "discriminator": "0000",
                "avatar": None,
                "bot": True,
            },
            "attachments": [],
            "embeds": [],
            "mentions": [],
            "mention_roles": [],
            "pinned": False,
            "mention_everyone": False,
            "tts": False,
            "timestamp": discord.utils.utcnow().isoformat(),
            "edited_timestamp": None,
            "flags": body.get("flags", 0),
            "components": body.get("components", []),
        }

    def _record(self, kind: str, message_id: int, body: dict[str, Any], files: Any) -> None:
        contents: dict[str, bytes] = {}
        for file in files or []:
            file.fp.seek(0)
            contents[file.filename] = file.fp.read()
        self.sent.append(
            Sent(
                kind,
                message_id,
                body.get("content") or "",
                body.get("flags", 0),
                _buttons(body.get("components")),
                _disabled(body.get("components")),
                contents,
                body.get("allowed_mentions"),
            )
        )

    async def request(
        self,
        route: Any,
        session: Any = None,
        *,
        payload: dict[str, Any] | None = None,
        multipart: list[dict[str, Any]] | None = None,
        files: Any = None,
        **_: Any,
    ) -> Any:
        if payload is None and multipart:
            payload = json.loads(multipart[0]["value"])
        payload = payload or {}
        token = route.webhook_token
        if route.path.endswith("/callback"):
            kind = payload["type"]
            body = payload.get("data") or {}
            if kind == 8:  # autocomplete
                self.choices = body.get("choices", [])
                return {"interaction": {"id": str(route.webhook_id), "type": 4}}
            if kind in (4, 5):  # a new message (5: deferred, "thinking")
                self.events.append("defer" if kind == 5 else "respond")
                self.original[token] = snowflake()
                self.flags[token] = body.get("flags", 0)
            if kind in (4, 7):  # 7: a button edits the message it sits on
                self._record("response" if kind == 4 else "update", self.original.get(token, 0), body, files)
            return {
                "interaction": {
                    "id": str(route.webhook_id),
                    "type": 2,
                    "response_message_id": str(self.original.get(token, snowflake())),
                    "response_message_ephemeral": bool(body.get("flags", 0) & EPHEMERAL),
                }
            }
        if route.method == "POST":  # a followup
            message_id = snowflake()
            self._record("followup", message_id, payload, files)
            return self._message(message_id, payload)
        if route.method == "PATCH":  # editing the original response
            message_id = self.original[token]
            self._record("edit", message_id, {**payload, "flags": self.flags.get(token, 0)}, files)
            return self._message(message_id, payload)
        if route.method == "GET":
            return self._message(self.original[token], {})
        return None


class Interactions:
    """Run slash commands and click buttons as a given member, in a given channel, with given permissions."""

    def __init__(self, bot: discord.Client, guild: discord.Guild, channel: discord.abc.GuildChannel) -> None:
        self.bot = bot
        self.guild = guild
        self.channel = channel
        self.adapter = RecordingAdapter(bot, channel.id)
        # dpytest swaps in its own connection state, which the tree never registered with.
        bot._connection._command_tree = bot.tree  # type: ignore[attr-defined]

    def _user(self, user: discord.abc.User) -> dict[str, Any]:
        return {"id": str(user.id), "username": user.name, "discriminator": "0000", "global_name": None, "avatar": None}

    def _member(self, user: discord.abc.User, permissions: discord.Permissions) -> dict[str, Any]:
        return {
            "user": self._user(user),
            "roles": [],
            "joined_at": discord.utils.utcnow().isoformat(),
            "nick": getattr(user, "nick", None),
            "deaf": False,
            "mute": False,
            "flags": 0,
            "permissions": str(permissions.value),
        }

    def _payload(
        self, kind: int, user: discord.abc.User, permissions: discord.Permissions, data: dict[str, Any], **extra: Any
    ) -> dict[str, Any]:
        assert self.bot.user is not None
        return {
            "id": str(snowflake()),
            "application_id": str(self.bot.user.id),
            "type": kind,
            "token": f"t{snowflake()}",
            "version": 1,
            "guild_id": str(self.guild.id),
            "guild_locale": "en-US",
            "locale": "en-US",
            "channel_id": str(self.channel.id),
            "channel": {
                "id": str(self.channel.id),
                "type": 0,
                "guild_id": str(self.guild.id),
                "name": self.channel.name,
            },
            "member": self._member(user, permissions),
            "app_permissions": str(discord.Permissions.all().value),
            "attachment_size_limit": 25 * 1024 * 1024,
            "entitlements": [],
            "data": data,
            **extra,
        }

    def _options(self, options: dict[str, Any], resolved: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for name, value in options.items():
            if isinstance(value, discord.abc.User):
                resolved.setdefault("users", {})[str(value.id)] = self._user(value)
                member = self._member(value, MEMBER_PERMISSIONS)
                member.pop("user")
                resolved.setdefault("members", {})[str(value.id)] = member
                out.append({"name": name, "type": 6, "value": str(value.id)})
            elif isinstance(value, discord.abc.GuildChannel):
                resolved.setdefault("channels", {})[str(value.id)] = {
                    "id": str(value.id),
                    "name": value.name,
                    "type": value.type.value,
                    "permissions": "0",
                }
                out.append({"name": name, "type": 7, "value": str(value.id)})
            elif isinstance(value, bool):
                out.append({"name": name, "type": 5, "value": value})
            elif isinstance(value, int):
                out.append({"name": name, "type": 4, "value": value})
            else:
                out.append({"name": name, "type": 3, "value": str(value)})
        return out

    def _command_data(self, path: str, options: dict[str, Any], focused: str | None = None) -> dict[str, Any]:
        top, *subs = path.split()
        resolved: dict[str, dict[str, Any]] = {}
        leaf = self._options(options, resolved)
        if focused is not None:
            for option in leaf:
                if option["name"] == focused:
                    option["focused"] = True
        # Subcommands wrap their options: a group is type 2, a subcommand type 1.
        for depth, name in reversed(list(enumerate(subs))):
            leaf = [{"name": name, "type": 1 if depth == len(subs) - 1 else 2, "options": leaf}]
        return {
            "id": str(snowflake()),
            "name": top,
            "type": 1,
            "options": leaf,
            "resolved": resolved,
            "guild_id": str(self.guild.id),
        }

    async def _dispatch(self, payload: dict[str, Any]) -> list[Sent]:
        before = len(self.adapter.sent)
        token = webhook_async.async_context.set(self.adapter)
        try:
            # The state runs handlers in tasks, which copy this context: they see the recording adapter.
            self.bot._connection.parse_interaction_create(payload)  # type: ignore[attr-defined]
            running = [
                t
                for t in asyncio.all_tasks()
                if not t.done()
                and (t.get_name() == "CommandTree-invoker" or t.get_name().startswith("discord-ui-view-dispatch"))
            ]
            await asyncio.gather(*running)
        finally:
            webhook_async.async_context.reset(token)
        return self.adapter.sent[before:]

    async def run(self, path: str, user: discord.abc.User, /, *, admin: bool = False, **options: Any) -> list[Sent]:
        """`/path options…` as `user` (options may themselves be called `user`); returns what the bot sent."""
        permissions = ADMIN_PERMISSIONS if admin else MEMBER_PERMISSIONS
        return await self._dispatch(self._payload(2, user, permissions, self._command_data(path, options)))

    async def autocomplete(
        self, path: str, user: discord.abc.User, focused: str, /, *, admin: bool = True, **options: Any
    ) -> list[dict[str, Any]]:
        """The choices offered while `user` types into option `focused`."""
        permissions = ADMIN_PERMISSIONS if admin else MEMBER_PERMISSIONS
        await self._dispatch(self._payload(4, user, permissions, self._command_data(path, options, focused)))
        return self.adapter.choices

    async def click(self, sent: Sent, label: str, user: discord.abc.User, *, admin: bool = False) -> list[Sent]:
        """Press the button labelled `label` on a message the bot sent."""
        permissions = ADMIN_PERMISSIONS if admin else MEMBER_PERMISSIONS
        data = {"custom_id": sent.buttons[label], "component_type": 2}
        message = self.adapter._message(sent.message_id, {"content": sent.content, "flags": sent.flags})
        payload = self._payload(3, user, permissions, data, message=message)
        self.adapter.original[payload["token"]] = sent.message_id  # "@original" is the message clicked on
        self.adapter.flags[payload["token"]] = sent.flags
        return await self._dispatch(payload)
