"""The listener through dpytest's simulated gateway: ingestion, edits, deletes, replies, mention safety."""

from __future__ import annotations

import asyncio
import time

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend
from discord.ext.test import factories as facts
from sqlalchemy import select

from bot.discord_bot import ElefantBot
from bot.memory.manager import MemoryManager
from bot.reply.respond import Responder
from db.engine import create_session_factory
from db.models import ChatMessage
from tests.memory.facts.test_store import AppendingModel
from tests.memory.intake.test_queue_outage import chat_table_locked


class FailingChat:
    async def __call__(self, request, context):
        raise TimeoutError("model down")


async def echo_chat(request, context):
    return f"You said {request.text!r}. I know: {context}. @everyone <@&{2**60}>"


@pytest.fixture
async def bot(engine, settings):
    memory = MemoryManager(engine, settings, facts_model=AppendingModel())
    await memory.start()
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=echo_chat, policy="anyone"
    )
    bot = ElefantBot(memory=memory, responder=responder, settings=settings, sync_commands=False)
    dpytest.configure(bot, members=["alice", "bob"])
    await bot._async_setup_hook()  # after configure, as the field notes say
    await bot.setup_hook()  # login() would call it; dpytest never logs in
    yield bot
    await dpytest.empty_queue()
    await memory.close()


async def stored_texts(engine) -> list[str]:
    async with create_session_factory(engine)() as session:
        return list((await session.scalars(select(ChatMessage.message_text).order_by(ChatMessage.timestamp))).all())


async def test_every_guild_message_is_ingested_and_plain_chat_gets_no_reply(bot, engine):
    await dpytest.message("hello everyone")
    await dpytest.message("nice weather")
    await bot.memory.flush()
    assert await stored_texts(engine) == ["hello everyone", "nice weather"]
    assert dpytest.verify().message().nothing()


async def test_mention_remember_then_reply_uses_the_authors_facts(bot, engine):
    config = dpytest.get_config()
    alice = config.members[0]
    await dpytest.message(f"<@{bot.user.id}> remember that I like green tea", member=alice)
    reply = dpytest.get_message()
    name = alice.display_name
    assert reply.content == f"Got it. What I know about {name} now:\n{name} likes green tea."
    await dpytest.message(f"{bot.settings.bot_name}, how are you?", member=alice)
    chat = dpytest.get_message()
    assert "likes green tea" in chat.content
    # Mention safety: the model's @everyone and role ping arrive defused, and nothing may ping.
    assert "@everyone" not in chat.content and f"<@&{2**60}>" not in chat.content
    await bot.memory.flush()
    texts = await stored_texts(engine)
    assert any("likes green tea" in t for t in texts)  # the bot's own replies are stored too


async def test_model_failure_mid_reply_gives_an_apology_not_a_traceback(bot):
    bot.responder._chatter = FailingChat()
    await dpytest.message(f"<@{bot.user.id}> tell me a story")
    reply = dpytest.get_message()
    assert reply.content.startswith("Sorry, I couldn't think that through")


async def test_edits_and_deletes_reach_the_database(bot, engine):
    msg = await dpytest.message("first version")
    gone = await dpytest.message("to be deleted")
    bulk = [await dpytest.message(f"purged {i}") for i in range(3)]
    # A real MESSAGE_UPDATE gateway payload through discord.py's own parser (dpytest has no edit event).
    data = facts.dict_from_message(msg)
    data.update(
        content="second version",
        edited_timestamp=discord.utils.utcnow().isoformat(),
        channel_id=str(msg.channel.id),
        guild_id=str(msg.guild.id),
    )
    backend.get_state().parse_message_update(data)
    await gone.delete()
    backend.get_state().parse_message_delete_bulk(
        {
            "ids": [str(m.id) for m in bulk],
            "channel_id": str(msg.channel.id),
            "guild_id": str(msg.guild.id),
        }
    )
    await dpytest.run_all_events()
    await bot.memory.flush()
    assert await stored_texts(engine) == ["second version"]


async def test_direct_messages_are_not_stored(bot, engine):
    config = dpytest.get_config()
    dm = await config.members[0].create_dm()
    await dpytest.message("secret in a DM", channel=dm)
    await bot.memory.flush()
    assert await stored_texts(engine) == []


async def test_every_sent_message_allows_no_mentions(bot, monkeypatch):
    sent: list[dict] = []
    original = bot.http.send_message

    async def recording(channel_id, *, params):
        channel = bot.get_channel(channel_id)  # noqa: F841 - dpytest reads its caller's `channel` local
        sent.append(params.payload)
        return await original(channel_id, params=params)

    monkeypatch.setattr(bot.http, "send_message", recording)
    bot.responder._chatter = lambda request, context: _long_answer()
    await dpytest.message(f"<@{bot.user.id}> write a lot")
    assert len(sent) >= 2  # a long answer is split
    for payload in sent:
        allowed = payload["allowed_mentions"]
        assert allowed["parse"] == [] and not allowed.get("replied_user") and not allowed.get("users")
        assert not allowed.get("roles")
        assert len(payload["content"]) <= 2000
    assert "message_reference" in sent[0]


async def _long_answer() -> str:
    return ("Ping <@123456789012345678> and @everyone. " * 60).strip()


async def test_replies_go_on_while_storage_is_stuck_and_everything_is_stored_after(
    engine, settings, db_url, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the overflow's spill files go to ./data
    small = settings.model_copy(update={"ingest_queue_max": 20, "ingest_flush_ms": 20, "memory_wait_seconds": 0.3})
    memory = MemoryManager(engine, small, facts_model=AppendingModel())
    await memory.start()
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=echo_chat, policy="anyone"
    )
    bot = ElefantBot(memory=memory, responder=responder, settings=small, sync_commands=False)
    dpytest.configure(bot, members=["alice", "bob"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    slowest = 0.0
    async with chat_table_locked(db_url, engine):  # every write to the chat table hangs meanwhile
        for i in range(60):
            began = time.perf_counter()
            await dpytest.message(f"{small.bot_name}, echo {i} please" if i % 10 == 0 else f"chatter {i}")
            slowest = max(slowest, time.perf_counter() - began)
            if i % 10 == 0:
                assert f"echo {i} please" in dpytest.get_message().content  # answered while storage is stuck
        assert memory.queue.stats.overflowed > 0
    await asyncio.wait_for(memory.flush(), 60)
    texts = await stored_texts(engine)
    await dpytest.empty_queue()
    await memory.close()
    # Storage is stuck for the whole loop, so a handler that waited for it would never end: a hang guard, not a
    # speed (the replies wait memory_wait_seconds for recall; a loaded machine takes longer).
    assert slowest < 30, f"handling one message took {slowest:.1f} s"
    people = [t for t in texts if t.startswith(("chatter", small.bot_name))]
    assert len(people) == 60 and sum(1 for t in texts if t.startswith("You said")) == 6  # replies stored too
