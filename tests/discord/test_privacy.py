"""Spans the listener, the responder and memory: a staff-only channel's secret never reaches a public channel.

Neither a reply nor a context built in a public channel carries it.
"""

from __future__ import annotations

from datetime import timedelta

import discord
import discord.ext.test as dpytest
import pytest

from bot.discord_bot import ElefantBot
from bot.memory.clock import Clock
from bot.memory.manager import MemoryManager
from bot.reply.model_turns import ModelTurns
from bot.reply.respond import Responder
from bot.reply.routing import Request

SECRET = "the vault code is 4242"


@pytest.fixture
async def bot(engine, settings, llm):
    memory = MemoryManager(engine, settings, llm=llm, clock=Clock())
    await memory.start()
    turns = ModelTurns(llm, memory.directory, settings)
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=turns.route, chatter=turns.chat, policy="anyone"
    )
    bot = ElefantBot(memory=memory, responder=responder, settings=settings, sync_commands=False)
    dpytest.configure(bot, text_channels=["general", "staff"], members=["alice"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    yield bot
    await dpytest.empty_queue()
    await memory.close()


async def test_staff_channel_secret_stays_in_the_staff_channel(bot, llm):
    config = dpytest.get_config()
    guild = config.guilds[0]
    general = discord.utils.get(guild.text_channels, name="general")
    staff = discord.utils.get(guild.text_channels, name="staff")
    alice = config.members[0]
    await dpytest.set_permission_overrides(guild.default_role, staff, read_messages=False)
    await dpytest.message(SECRET, channel=staff, member=alice)
    await dpytest.message("lunch at noon?", channel=general, member=alice)
    await bot.memory.flush()

    await dpytest.message(f"<@{bot.user.id}> what's new with me?", channel=general, member=alice)
    public_reply = dpytest.get_message()
    assert "4242" not in public_reply.content
    context = await bot.memory.recollection.context(general.guild.id, alice.id)
    assert context is None or "4242" not in context
    assert bot.memory.summaries is not None
    today = await bot.memory.summaries.today(general.guild.id, bot.memory.clock.now())
    assert all("4242" not in text for text in today.values())

    if not llm.is_offline:
        # Proof the test can fail: inside the staff channel the model does see the staff conversation.
        request = Request(guild.id, alice.id, "what did I say?", channel_id=staff.id)
        assert "4242" in (await bot.responder.respond(request)).text
        # And an admin's include brings the channel into guild-wide memory.
        await bot.memory.channels.set_mode(general.guild.id, staff.id, "include")
        now = bot.memory.clock.now()
        rows = await bot.memory.summaries._summarise(  # the last hour, uncached (so a run at midnight holds too)
            general.guild.id, now.date(), now - timedelta(hours=1), now, fallback=False
        )
        assert any("4242" in text for text in rows[0].values())
