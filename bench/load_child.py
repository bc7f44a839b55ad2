"""One bot process of bench.load: `python -m bot run` with dpytest as the gateway, delivering messages at a fixed rate.

Everything but Discord is real (open_app with its background work, the PostgreSQL database, the model client
against the stub's process). Each process is a shard of its own: its own guild (ids numbered from LOAD_ID_BASE),
40 members, two channels. From READY it delivers LOAD_RATE messages a second for LOAD_SECONDS, LOAD_SHARE of them
addressed to the bot (half questions about the past, half chat), each at its scheduled moment: a reply's latency
counts from that moment, so a stalled event loop that delivers late is not excused (no coordinated omission).
Then it waits for the replies still due, prints one line `RESULT {json}` and stops as the bot stops. With
LOAD_HISTORY the guild has that many messages of the last two weeks before READY, without vectors or summaries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from datetime import timedelta
from itertools import count
from typing import Any

import discord
import discord.ext.test as dpytest
from discord.ext.test import backend, factories
from discord.ext.test.websocket import FakeWebSocket

from bench.common import StallMeter
from bench.recall import vocabulary
from bot.cli import main
from bot.discord_bot import ElefantBot
from bot.reply.deadline import SLOW, Answer
from db.records import IncomingMessage

INDEX = int(os.environ["LOAD_INDEX"])
BASE = int(os.environ["LOAD_ID_BASE"])
RATE = float(os.environ["LOAD_RATE"])
SECONDS = float(os.environ["LOAD_SECONDS"])
SHARE = float(os.environ.get("LOAD_SHARE", "0.05"))
HISTORY = int(os.environ.get("LOAD_HISTORY", "0"))  # messages already said over the last HISTORY_DAYS
HISTORY_DAYS = 14
FAILING = "The model is failing right now"
MEMBERS = [f"member{i:02}" for i in range(40)]


class Timings:
    """When each addressed message was due and when its reply reached Discord's HTTP API, and what it said."""

    def __init__(self, bot: ElefantBot) -> None:
        self.due: dict[int, float] = {}
        self.latency: dict[int, float] = {}
        self.kinds: dict[str, int] = {"model": 0, "deadline": 0, "offline": 0}
        self.delivered = False  # every message is out
        self.answered = asyncio.Event()  # and every addressed one has its reply
        original = bot.http.send_message
        loop = asyncio.get_running_loop()

        async def send_message(channel_id: int, *, params: Any) -> Any:
            reference = (params.payload or {}).get("message_reference") or {}
            replied = int(reference.get("message_id", 0))
            if replied in self.due and replied not in self.latency:
                self.latency[replied] = loop.time() - self.due[replied]
                self.check()
            return await original(channel_id, params=params)

        bot.http.send_message = send_message  # type: ignore[method-assign]
        respond_within = bot.responder.respond_within

        async def recorded(request: Any, **kw: Any) -> Answer:
            answer = await respond_within(request, **kw)
            kind = "deadline" if SLOW in answer.text else "offline" if FAILING in answer.text else "model"
            self.kinds[kind] += 1
            return answer

        bot.responder.respond_within = recorded  # type: ignore[method-assign]

    def check(self) -> None:
        if self.delivered and len(self.latency) == len(self.due):
            self.answered.set()


async def no_history(self: Any, channel_id: int, limit: int, **kwargs: Any) -> list[dict[str, Any]]:
    """A fresh guild: Discord has nothing the bot has not stored (catch-up still walks every channel)."""
    return []


async def deliver(bot: ElefantBot, timings: Timings) -> int:
    """LOAD_RATE messages a second for LOAD_SECONDS, each delivered at its due moment (or late, counted late)."""
    config = dpytest.get_config()
    channels, members = config.channels, config.members
    assert bot.user is not None
    mention = f"<@{bot.user.id}>"
    rng = random.Random(INDEX)
    words, _ = vocabulary(random.Random(7))
    loop = asyncio.get_running_loop()
    start, sent = loop.time(), 0
    while (due := start + sent / RATE) < start + SECONDS:
        if (wait := due - loop.time()) > 0:
            await asyncio.sleep(wait)
        said = " ".join(rng.choices(words[:2000], k=rng.randint(4, 14)))
        member = members[rng.randrange(len(members))]
        if addressed := rng.random() < SHARE:
            other = members[rng.randrange(len(members))].display_name
            said = (
                f"{mention} what did {other} say about {rng.choice(words[:800])}?"
                if rng.random() < 0.5
                else f"{mention} {said}"
            )
        message = backend.make_message(said, member, channels[sent % len(channels)])
        if addressed:
            timings.due[message.id] = due
        sent += 1
    return sent


async def prefill(bot: ElefantBot, count_: int) -> None:
    """The guild's past: `count_` messages over the last HISTORY_DAYS, stored before READY as an import stores them
    (no vectors: the embedding backlog, the summaries of the finished days and the index are start-up work)."""
    config = dpytest.get_config()
    guild, channels, members = config.guilds[0], config.channels, config.members
    rng = random.Random(100 + INDEX)
    words, _ = vocabulary(random.Random(7))
    now = discord.utils.utcnow()
    step = timedelta(days=HISTORY_DAYS) / max(count_, 1)
    for i in range(count_):
        at = now - step * (count_ - i)
        member = members[rng.randrange(len(members))]
        await bot.memory.intake.message(
            IncomingMessage(
                guild_id=guild.id,
                channel_id=channels[i % len(channels)].id,
                message_id=discord.utils.time_snowflake(at) | INDEX << 17 | i % 4096,
                author_id=member.id,
                author_name=member.display_name,
                content=" ".join(rng.choices(words[:2000], k=rng.randint(4, 14))),
                created_at=at,
            ),
            wait=True,
            embed_now=False,
        )
    await bot.memory.flush()


async def _fake_start(self: ElefantBot, token: str, *, reconnect: bool = True) -> None:
    ids = count(BASE)
    factories.make_id = lambda: next(ids)
    dpytest.configure(self, text_channels=["general", "random"], members=MEMBERS)
    self._sync_commands = False
    await self._async_setup_hook()
    await self.setup_hook()
    if HISTORY:
        await prefill(self, HISTORY)
    counter = count()
    factories.make_id = lambda: (
        discord.utils.time_snowflake(discord.utils.utcnow()) | INDEX << 17 | next(counter) % 4096
    )
    began = time.perf_counter()
    await self.on_ready()  # catch-up begins, as on a real start
    timings = Timings(self)
    with StallMeter() as stall:
        sent = await deliver(self, timings)
        deadline = self.settings.reply_deadline_seconds
        timings.delivered = True
        timings.check()
        with contextlib.suppress(TimeoutError):  # the replies still due (a missing one counts as failed)
            async with asyncio.timeout(deadline + 30):
                await timings.answered.wait()
    embedding = self.memory.embedding
    result = {
        "index": INDEX,
        "sent": sent,
        "seconds": time.perf_counter() - began,
        "latencies": sorted(timings.latency.values()),
        "unanswered": len(timings.due) - len(timings.latency),
        "kinds": timings.kinds,
        "worst_stall": stall.worst,
        "embedding_waiting": getattr(embedding, "waiting", None),  # None before the bound (a baseline run)
        "embedding_let_go": getattr(embedding, "let_go", None),
        "embedded": embedding.embedded if embedding else None,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    FakeWebSocket.open = property(lambda ws: False)  # type: ignore[assignment,method-assign] # no socket to close
    backend.FakeHttp.logs_from = no_history  # type: ignore[method-assign]
    ElefantBot.start = _fake_start  # type: ignore[method-assign]
    main(["run"])
