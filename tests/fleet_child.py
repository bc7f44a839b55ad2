"""One process of a fleet: `python -m bot run` with the gateway faked, sharing a database and a "Discord" with its
siblings (tests/test_fleet.py).

Every process numbers dpytest's objects from FLEET_ID_BASE, so all of them see one guild with the same channels and
members; the messages each one delivers are numbered as Discord numbers them, this process (FLEET_INDEX) as the
worker. "Discord" is a JSON-lines file (FLEET_DISCORD_LOG): each message is written there before it is delivered, as
Discord has a message before any bot hears of it, and a process reading history reads the file, so its catch-up on
READY finds what was said while it was down and what its siblings delivered meanwhile. It delivers FLEET_RATE
messages a second, round robin over two channels and three members (each naming the next), until it is stopped; at
READY it prints the guild's and the members' ids, and CAUGHT UP once its catch-up is done.
"""

from __future__ import annotations

import asyncio
import json
import os
from itertools import count
from pathlib import Path
from typing import Any

import discord
import discord.ext.test as dpytest
from discord.ext.test import backend, factories
from discord.ext.test.websocket import FakeWebSocket

from bot.cli import main
from bot.discord_bot import ElefantBot

LOG = Path(os.environ["FLEET_DISCORD_LOG"])
BASE = int(os.environ["FLEET_ID_BASE"])
INDEX = int(os.environ["FLEET_INDEX"])
RATE = float(os.environ.get("FLEET_RATE", "100"))
_make_dict = factories.make_message_dict


def numbering(start: int) -> None:
    ids = count(start)
    factories.make_id = lambda: next(ids)


def discord_numbering() -> None:
    """Message ids as Discord makes them: the millisecond, then a worker (this process), then a counter; so ids
    of all processes grow with time, which catch-up relies on as it does on Discord."""
    counter = count()

    def make_id() -> int:
        return discord.utils.time_snowflake(discord.utils.utcnow()) | (INDEX % 32) << 17 | next(counter) % 4096

    factories.make_id = make_id


def said(*args: Any, **kwargs: Any) -> dict[str, Any]:
    data = _make_dict(*args, **kwargs)
    with LOG.open("a") as log:  # one short line per write: appends from several processes do not interleave
        log.write(json.dumps(data, default=str) + "\n")
    return data


def seed() -> int:
    """Load what "Discord" has into dpytest's channels; how many messages."""
    lines = LOG.read_text().splitlines() if LOG.exists() else []
    channels: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        data = json.loads(line)
        channels.setdefault(int(data["channel_id"]), []).append(data)
    backend._cur_config.messages.update(channels)
    return len(lines)


_history: dict[int, list[dict[str, Any]]] = {}  # what "Discord" has, by channel, as far as the file was read
_read_to = [0]


def _read_on() -> None:
    """Read what was appended to the shared file since the last time (whole lines only)."""
    if not LOG.exists():
        return
    with LOG.open("rb") as log:
        log.seek(_read_to[0])
        tail = log.read()
    complete = tail[: tail.rfind(b"\n") + 1]
    _read_to[0] += len(complete)
    for line in complete.splitlines():
        data = json.loads(line)
        _history.setdefault(int(data["channel_id"]), []).append(data)


async def live_history(
    self: Any, channel_id: int, limit: int, before: int | None = None, after: int | None = None, around: Any = None
) -> list[dict[str, Any]]:
    """Discord's history is one for every process: read on in the shared file at each page (a process's own dpytest
    knows only what it delivered since it started); answered as tests/discord/gateway.py `discord_logs_from` does."""
    _read_on()
    messages = sorted(_history.get(channel_id, []), key=lambda m: int(m["id"]))
    later = [m for m in messages if after is None or int(m["id"]) > after][:limit]
    return list(reversed(later))


async def caught_up(bot: ElefantBot) -> None:
    await bot.catch_up.wait()
    print("CAUGHT UP", flush=True)


async def _fake_start(self: ElefantBot, token: str, *, reconnect: bool = True) -> None:
    numbering(BASE)
    dpytest.configure(self, text_channels=["general", "random"], members=["alice", "bob", "carol"])
    self._sync_commands = False
    await self._async_setup_hook()
    await self.setup_hook()
    seed()
    discord_numbering()
    factories.make_message_dict = said
    await self.on_ready()  # discord.py calls it once the gateway is ready: catch-up begins
    config = dpytest.get_config()
    guild = config.guilds[0]
    members = " ".join(f"{m.name}={m.id}" for m in config.members)
    print(f"READY guild={guild.id} {members}", flush=True)
    asyncio.get_running_loop().create_task(caught_up(self))
    i = 0
    while not self.is_closed():
        mentioned = config.members[(i + 1) % 3]  # each member names the next: bob names carol
        await dpytest.message(
            f"p{INDEX} m{i} <@{mentioned.id}>", channel=config.channels[i % 2], member=config.members[i % 3]
        )
        i += 1
        await asyncio.sleep(1 / RATE)


if __name__ == "__main__":
    FakeWebSocket.open = property(lambda ws: False)  # type: ignore[assignment,method-assign] # no socket to close
    backend.FakeHttp.logs_from = live_history  # type: ignore[method-assign]
    ElefantBot.start = _fake_start  # type: ignore[method-assign]
    main(["run"])
