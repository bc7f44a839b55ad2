"""The listener under the reply deadline: a hanging model (real google-genai client, stub) through dpytest.

The member sees the typing indicator, then a reply from memory within the deadline; the facts change they
asked for finishes afterwards and arrives as a follow-up reply.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from types import SimpleNamespace

import discord
import discord.ext.test as dpytest
import numpy as np
import pytest
from discord.ext.test import backend

from bot.app import open_app
from bot.cogs import listener
from bot.discord_bot import ElefantBot
from bot.llm.local_embedder import DIMENSIONS
from fakes.gemini_stub import hang
from tests.reply.test_deadline import settings_for


@pytest.fixture
async def bot(db_url, stub):
    # One short attempt: the change gives up on the hanging model (and merges offline) soon after the deadline.
    settings = settings_for(
        db_url, stub.base_url, llm_timeout_seconds=1.5, llm_max_attempts=1, discord_members_intent=True
    )
    async with open_app(settings) as app:
        bot = ElefantBot(memory=app.memory, responder=app.responder, settings=settings, sync_commands=False)
        dpytest.configure(bot, members=["alice"])
        await bot._async_setup_hook()
        await bot.setup_hook()
        yield bot
        await dpytest.empty_queue()


async def next_message(within: float = 30):
    """The next message the bot sends, waiting for it up to `within` seconds (a hang guard)."""
    for _ in range(int(within / 0.05)):
        if not dpytest.sent_queue.empty():
            return dpytest.get_message()
        await asyncio.sleep(0.05)
    raise AssertionError("the bot sent nothing")


async def test_a_hanging_model_gets_a_reply_in_time_and_the_change_as_a_follow_up(bot, stub, monkeypatch):
    events: list[str] = []
    send_typing, record_reply = bot.http.send_typing, bot.memory.intake.reply

    async def typing(channel_id):  # the HTTP edge of the typing indicator
        events.append("typing")
        return await send_typing(channel_id)

    async def recording(*args, **kwargs):  # right after a reply was sent
        events.append("reply")
        return await record_reply(*args, **kwargs)

    monkeypatch.setattr(bot.http, "send_typing", typing)
    monkeypatch.setattr(bot.memory.intake, "reply", recording)
    alice = dpytest.get_config().members[0]
    guild = dpytest.get_config().guilds[0]
    name = alice.display_name
    await bot.memory.facts.remember(guild.id, alice.id, f"{name} likes green tea", requested_by=alice.id)
    stub.responder = lambda request: hang()

    await dpytest.message(f"<@{bot.user.id}> remember that I play chess", member=alice)
    reply = await next_message()
    # In time: the deadline's answer from memory, while the model still hangs (its answer would say "Got it").
    assert reply.content.startswith(f"The model is slow right now, so I'm still saving that about {name}")
    assert reply.content.endswith(f"What I know about {name} so far: {name} likes green tea.")
    assert events.index("typing") < events.index("reply")  # the member saw the bot typing while it waited

    follow_up = await next_message()
    assert follow_up.content == f"Got it. What I know about {name} now:\n{name} likes green tea. {name} plays chess."
    assert await bot.memory.facts.get(guild.id, alice.id) == f"{name} likes green tea. {name} plays chess."


async def test_the_typing_indicator_never_holds_or_breaks_the_reply(bot, monkeypatch):
    """discord.py's `typing()` awaits its first request before the body runs: a typing endpoint that is slow (a
    rate limit's wait) held the whole reply back, and one that failed (no permission) replaced it by an apology."""
    alice = dpytest.get_config().members[0]
    calls: list[str] = []
    monkeypatch.setattr(listener, "TYPING_AFTER_SECONDS", 0.0)  # at once, even for this quick answer

    async def slow(channel_id):  # never answers: a reply that waited for it would never come
        calls.append("slow")
        await asyncio.Event().wait()

    monkeypatch.setattr(bot.http, "send_typing", slow)
    await dpytest.message(f"<@{bot.user.id}> what do you know about me?", member=alice)
    reply = await next_message()
    assert calls == ["slow"]
    assert "I don't know anything about" in reply.content

    async def forbidden(channel_id):
        calls.append("forbidden")
        raise discord.Forbidden(backend.FakeRequest(403, "Forbidden"), "Missing Permissions")

    monkeypatch.setattr(bot.http, "send_typing", forbidden)
    await dpytest.message(f"<@{bot.user.id}> what do you know about me?", member=alice)
    reply = await next_message()
    assert calls[-1] == "forbidden" and "I don't know anything about" in reply.content


async def test_a_quick_answer_shows_no_typing_and_a_slower_ones_indicator_lands_before_it(bot, monkeypatch):
    """Sent beside the reply, the indicator's first request could land after the answer: Discord would then show
    the bot typing for ten seconds after it had answered."""
    alice = dpytest.get_config().members[0]
    events: list[str] = []
    send_typing, record_reply, describe = (
        bot.http.send_typing,
        bot.memory.intake.reply,
        bot.memory.recollection.describe,
    )

    requested = asyncio.Event()

    async def typing(channel_id):
        requested.set()
        await asyncio.sleep(0.1)  # Discord's round trip
        events.append("typing")
        return await send_typing(channel_id)

    async def recording(*args, **kwargs):  # right after the reply was sent (dpytest's HTTP edge reads its caller)
        events.append("reply")
        return await record_reply(*args, **kwargs)

    monkeypatch.setattr(bot.http, "send_typing", typing)
    monkeypatch.setattr(bot.memory.intake, "reply", recording)
    # An hour, so that "quicker than TYPING_AFTER_SECONDS" holds however slow the machine is.
    monkeypatch.setattr(listener, "TYPING_AFTER_SECONDS", 3600.0)
    await dpytest.message(f"<@{bot.user.id}> what do you know about me?", member=alice)
    await next_message()
    assert events == ["reply"]  # quicker than TYPING_AFTER_SECONDS: no indicator at all

    async def slower(*args, **kwargs):  # done while the indicator's first request is under way
        await requested.wait()
        return await describe(*args, **kwargs)

    monkeypatch.setattr(listener, "TYPING_AFTER_SECONDS", 0.0)
    # The reply waits for the request under way however long it takes here (a loaded machine's 0.1 s sleep may
    # outlast the shipped TYPING_SETTLE_SECONDS); that order is what this proves.
    monkeypatch.setattr(listener, "TYPING_SETTLE_SECONDS", 3600.0)
    monkeypatch.setattr(bot.memory.recollection, "describe", slower)
    events.clear()
    await dpytest.message(f"<@{bot.user.id}> what do you know about me?", member=alice)
    await next_message()
    assert events == ["typing", "reply"]


async def test_the_message_asking_is_never_embedded(bot, monkeypatch):
    """Addressed to the bot, it is the bot's conversation, not evidence of what was said: background embedding
    never takes it (it used to, beside the reply, on the CPU the reply needs, and made it a recall candidate);
    what people say to each other it embeds."""
    alice = dpytest.get_config().members[0]
    worker = bot.memory.embedding
    assert worker is not None
    encoded: list[str] = []

    # What the encoder is given is the point, not its vectors: the model runs at the lowest CPU priority, and
    # beside two busy processes it did not finish a batch in 30 s.
    async def watching(texts):
        encoded.extend(texts)
        return np.full((len(texts), DIMENSIONS), DIMENSIONS**-0.5, dtype=np.float32)

    monkeypatch.setattr(worker, "_encode", watching)
    worker.start()  # what `python -m bot run` starts (this app was opened without its background work)
    try:
        await dpytest.message(f"<@{bot.user.id}> what do you know about me?", member=alice)
        await next_message()
        await dpytest.message("my kitten is called Pixel", member=alice)
        await asyncio.wait_for(worker.idle(), 30)
    finally:
        await worker.close()
    assert encoded == ["my kitten is called Pixel"]


@pytest.mark.parametrize(("sent_ago", "left"), [(0.0, 10.0), (3.0, 7.0), (60.0, 5.0), (-30.0, 10.0)])
def test_the_deadline_counts_from_when_the_member_sent_the_message(sent_ago: float, left: float) -> None:
    """A reply the busy loop began 3 s late has 7 s left; at most half is taken (a clock ahead of Discord's); a
    message dated in the future (a clock behind) leaves the whole deadline."""
    sent = SimpleNamespace(created_at=discord.utils.utcnow() - timedelta(seconds=sent_ago))
    assert listener.time_left(sent, 10.0) == pytest.approx(left, abs=0.2)  # type: ignore[arg-type]
