"""`python -m bot run` with the Discord gateway faked: dpytest delivers a burst of messages until the bot closes.

Everything else is the real command: settings, migration, open_app, the listener, run_discord's signal handling
and the drain on the way out. Each message id the listener handed to memory (and memory accepted) is printed.
"""

from __future__ import annotations

import sys

import discord.ext.test as dpytest
from discord.ext.test.websocket import FakeWebSocket

from bot.cli import main
from bot.discord_bot import ElefantBot
from bot.memory.intake.face import Intake
from tests.discord.gateway import real_snowflakes

_ingest = Intake.message


async def _recording_ingest(self: Intake, message, **kwargs) -> bool:  # type: ignore[no-untyped-def]
    accepted = await _ingest(self, message, **kwargs)
    if accepted:
        sys.stdout.write(f"{message.message_id}\n")
    return accepted


async def _fake_start(self: ElefantBot, token: str, *, reconnect: bool = True) -> None:
    dpytest.configure(self, members=["alice", "bob"])
    self._sync_commands = False  # no Discord to sync with
    await self._async_setup_hook()
    await self.setup_hook()
    print("READY", flush=True)
    i = 0
    while not self.is_closed():
        await dpytest.message(f"burst {i}", member=i % 2)
        i += 1


if __name__ == "__main__":
    real_snowflakes()
    Intake.message = _recording_ingest  # type: ignore[method-assign]
    FakeWebSocket.open = property(lambda ws: False)  # type: ignore[assignment,method-assign] # no socket to close
    ElefantBot.start = _fake_start  # type: ignore[method-assign]
    main(["run"])
