"""A local stand-in for Discord's HTTP API and gateway, enough for discord.py to log in, sync and connect.

Used where the real `python -m bot` must meet Discord's answers: a wrong token (401), an application whose
privileged intents are off (the gateway closes with 4014), syncing commands (recorded; refused with 403 for a
guild the bot is not in). A subprocess is
pointed at it by tests/discord/shim/sitecustomize.py; a test in this process by `point_discord_py_at`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yarl
from aiohttp import WSMsgType, web

APPLICATION_ID = 2**60 + 777
GOOD_TOKEN = "MTE1MjkyMTUwNDYwNjg0Nz74.fake.token"  # only the first part means anything (the bot's ID)
READY = 0
HELLO = 10
IDENTIFY = 2


@dataclass
class FakeDiscord:
    """`privileged_intents`: what the developer portal allows; asking for more closes the gateway with 4014."""

    privileged_intents: bool = False
    foreign_guilds: set[int] = field(default_factory=set)  # guilds the bot is not in: syncing to them is refused
    synced: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # (path, commands)
    identified: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_put("/api/v10/applications/{app}/commands", self._sync)
        app.router.add_put("/api/v10/applications/{app}/guilds/{guild}/commands", self._sync)
        app.router.add_get("/api/v10/gateway/bot", self._gateway_bot)
        app.router.add_get("/gateway/", self._gateway)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _user(self) -> dict[str, Any]:
        return {"id": str(APPLICATION_ID), "username": "Elefant", "discriminator": "0", "avatar": None, "bot": True}

    async def _me(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bot {GOOD_TOKEN}":
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        return _json(self._user())

    async def _application(self, request: web.Request) -> web.Response:
        return _json(
            {
                "id": str(APPLICATION_ID),
                "name": "Elefant",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": {**self._user(), "id": str(APPLICATION_ID + 1), "bot": False},
                "verify_key": "0" * 64,
                "flags": 0,
            }
        )

    async def _sync(self, request: web.Request) -> web.Response:
        if int(request.match_info.get("guild", 0)) in self.foreign_guilds:
            return _json({"message": "Missing Access", "code": 50001}, status=403)  # as Discord answers
        commands = await request.json()
        self.synced.append((request.path, commands))
        return _json(
            [
                {**c, "id": str(APPLICATION_ID + 10 + i), "application_id": str(APPLICATION_ID)}
                for i, c in enumerate(commands)
            ]
        )

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        ws = str(yarl.URL(self.url).with_scheme("ws") / "gateway") + "/"
        return _json(
            {
                "url": ws,
                "shards": 1,
                "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1},
            }
        )

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"op": HELLO, "d": {"heartbeat_interval": 45_000}}))
        async for message in ws:
            if message.type is not WSMsgType.TEXT:
                continue
            payload = json.loads(message.data)
            if payload.get("op") == IDENTIFY:
                self.identified.append(payload["d"])
                if payload["d"]["intents"] & PRIVILEGED and not self.privileged_intents:
                    await ws.close(code=4014, message=b"Disallowed intent(s).")
                    break
                await ws.send_str(json.dumps({"op": READY, "t": "READY", "s": 1, "d": self._ready()}))
        return ws

    def _ready(self) -> dict[str, Any]:
        return {
            "v": 10,
            "user": self._user(),
            "guilds": [],
            "session_id": "fake",
            "resume_gateway_url": str(yarl.URL(self.url).with_scheme("ws") / "gateway") + "/",
            "application": {"id": str(APPLICATION_ID), "flags": 0},
        }


def _json(value: Any, status: int = 200) -> web.Response:
    # discord.py decodes a body only when Content-Type is exactly application/json (no charset).
    return web.Response(body=json.dumps(value).encode(), status=status, headers={"Content-Type": "application/json"})


PRIVILEGED = (1 << 1) | (1 << 8) | (1 << 15)  # members, presences, message content


def point_discord_py_at(url: str) -> None:
    """Send this process's discord.py to `url` instead of discord.com (what the shim does in a subprocess)."""
    import discord.gateway
    import discord.http

    discord.http.Route.BASE = f"{url}/api/v10"
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url).with_scheme("ws") / "gateway" / ""
