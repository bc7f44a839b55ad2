"""Catch-up through dpytest's gateway (both databases): what was said while the bot was away is read back from
Discord's history on READY and stored exactly as live messages are; what was deleted meanwhile goes.

"Discord" here is dpytest's channel log, with its `logs_from` replaced by one that follows the API's contract
(tests/discord/gateway.py `discord_logs_from`).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend
from discord.ext.test import factories as facts
from sqlalchemy import select

from bot.discord_bot import ElefantBot
from bot.memory.manager import MemoryManager
from bot.reply.respond import Responder
from db.deletion import FORMER
from db.engine import create_session_factory
from db.models import ChatMessage
from tests.discord.gateway import discord_logs_from
from tests.memory.facts.test_store import AppendingModel

_seq = iter(range(1, 4000))


async def logs_from(self, channel_id, limit, before=None, after=None, around=None):
    if FAILING.get(channel_id, 0) > 0:
        FAILING[channel_id] -= 1
        raise discord.HTTPException(_Response(500), "history unavailable")
    return await discord_logs_from(self, channel_id, limit, before=before, after=after)


class _Response:
    def __init__(self, status: int) -> None:
        self.status, self.reason = status, "fake"


FAILING: dict[int, int] = {}  # channel -> how many more of its history requests fail


async def chat(request, context):
    return "an answer"


@pytest.fixture
async def bot(engine, settings, monkeypatch):
    monkeypatch.setattr(backend.FakeHttp, "logs_from", logs_from)
    FAILING.clear()
    memory = MemoryManager(engine, settings, facts_model=AppendingModel())
    await memory.start()
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=chat, policy="anyone"
    )
    bot = ElefantBot(memory=memory, responder=responder, settings=settings, sync_commands=False)
    dpytest.configure(bot, text_channels=["general", "staff"], members=["alice", "bob"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    bot.catch_up.retry_seconds = (0.01, 0.05)  # a paused catch-up tries again at once (production: 1 s to 60 s)
    yield bot
    await bot.catch_up.cancel()
    await dpytest.empty_queue()
    await memory.close()


def said_while_away(channel, author, content: str, *, ago: timedelta, edited: bool = False) -> int:
    """A message Discord has that never reached the bot; its id dates it `ago` back."""
    at = datetime.now(UTC) - ago
    message_id = discord.utils.time_snowflake(at) + next(_seq)
    data = facts.make_message_dict(
        channel,
        author,
        id_num=message_id,
        content=content,
        timestamp=at.isoformat(),
        edited_timestamp=(at + timedelta(minutes=1)).isoformat() if edited else None,
    )
    backend._cur_config.messages.setdefault(channel.id, []).append(data)
    return message_id


async def catch_up(bot) -> None:
    await bot.on_ready()
    await bot.catch_up.wait()
    await bot.memory.flush()


async def stored(engine) -> dict[int, tuple[str, int]]:
    async with create_session_factory(engine)() as session:
        rows = await session.execute(select(ChatMessage.message_id, ChatMessage.message_text, ChatMessage.kind))
        return {m: (text, kind) for m, text, kind in rows}


async def test_what_was_said_while_away_is_stored_once_and_old_questions_get_no_answer(bot, engine):
    config = dpytest.get_config()
    general, staff = config.channels[0], config.channels[1]
    alice, bob = config.members
    live = await dpytest.message("said while the bot was up", channel=general, member=alice)
    await bot.memory.flush()
    missed = [
        said_while_away(general, bob, "said while it was down", ago=timedelta(minutes=5)),
        said_while_away(staff, alice, "in the other channel", ago=timedelta(minutes=4)),
        said_while_away(general, alice, f"<@{bot.user.id}> what did bob say?", ago=timedelta(minutes=3)),
    ]
    await catch_up(bot)
    await catch_up(bot)  # a second READY (a reconnect) reads it all again: nothing is stored twice
    rows = await stored(engine)
    assert set(rows) == {live.id, *missed}
    assert dpytest.verify().message().nothing()  # an old question is not answered hours later


async def test_an_edit_and_a_deletion_made_while_away_are_followed(bot, engine):
    config = dpytest.get_config()
    general = config.channels[0]
    alice = config.members[0]
    kept = await dpytest.message("this one stays", channel=general, member=alice)
    changed = await dpytest.message("first words", channel=general, member=alice)
    gone = await dpytest.message("deleted while the bot was down", channel=general, member=alice)
    await bot.memory.flush()
    log = backend._cur_config.messages[general.id]
    log[:] = [m for m in log if int(m["id"]) != gone.id]  # deleted in Discord, no event reached the bot
    for m in log:
        if int(m["id"]) == changed.id:
            m["content"] = "second words"
            m["edited_timestamp"] = datetime.now(UTC).isoformat()
    await catch_up(bot)
    rows = await stored(engine)
    assert set(rows) == {kept.id, changed.id}
    assert rows[changed.id][0] == "second words"


async def test_catch_up_is_bounded_and_a_failing_channel_is_read_once_discord_answers(bot, engine, caplog):
    config = dpytest.get_config()
    general, staff = config.channels[0], config.channels[1]
    alice = config.members[0]
    too_old = said_while_away(staff, alice, "two days ago", ago=timedelta(hours=48))
    recent = said_while_away(staff, alice, "an hour ago", ago=timedelta(hours=1))
    FAILING[general.id] = 3  # read first; Discord answers its fourth request
    caplog.set_level(logging.INFO, logger="bot.catchup")
    late = said_while_away(general, alice, "unreachable for a while", ago=timedelta(minutes=10))
    await catch_up(bot)
    assert set(await stored(engine)) == {recent, late}  # CATCHUP_HOURS (24) bounds it; too_old stays unread
    assert too_old not in await stored(engine)
    failed = [r for r in caplog.records if f"catching up on channel {general.id}" in r.getMessage()]
    assert len(failed) == 1, failed  # one line for the channel, not one per try
    assert "after 3 retries" in caplog.text


async def test_an_opted_out_members_missed_messages_are_not_stored(bot, engine):
    config = dpytest.get_config()
    general = config.channels[0]
    alice, bob = config.members
    await bot.memory.admin.opt_out(general.guild.id, alice.id, delete_stored=False)
    said_while_away(general, alice, "alice while away", ago=timedelta(minutes=2))
    bobs = said_while_away(general, bob, "bob while away", ago=timedelta(minutes=1))
    await catch_up(bot)
    assert set(await stored(engine)) == {bobs}


async def test_what_was_said_while_opted_out_is_not_stored_by_a_reconnect_after_opting_back_in(bot, engine):
    config = dpytest.get_config()
    general, alice = config.channels[0], config.members[0]
    moments = iter(range(5))

    async def said(content: str) -> int:
        await asyncio.sleep(0.02)  # a snowflake dates a message to the millisecond: each step after the last
        return said_while_away(general, alice, f"{content} {next(moments)}", ago=timedelta(0))

    before = await said("before opting out")
    await bot.memory.admin.opt_out(general.guild.id, alice.id, delete_stored=False)
    during = await said("while opted out")
    await catch_up(bot)  # a reconnect while she is opted out: nothing of hers
    assert set(await stored(engine)) == set()
    await bot.memory.admin.opt_in(general.guild.id, alice.id)
    after = await said("after opting back in")
    await catch_up(bot)  # the next reconnect reads all three back: what she said opted out stays out
    assert set(await stored(engine)) == {before, after}
    assert during not in await stored(engine)


async def test_others_mentions_of_a_forgotten_member_said_before_are_read_back_without_her(bot, engine):
    config = dpytest.get_config()
    general = config.channels[0]
    alice, bob = config.members
    hers = said_while_away(general, alice, "hers, before her forget-me", ago=timedelta(minutes=6))
    mention = said_while_away(general, bob, f"ask <@{alice.id}>, she knows", ago=timedelta(minutes=5))
    await bot.memory.admin.forget_member(general.guild.id, alice.id)
    await catch_up(bot)
    rows = await stored(engine)
    assert hers not in rows
    assert rows[mention][0] == f"ask {FORMER}, she knows"


async def test_catch_up_reaching_further_back_than_retention_keeps_to_retention(engine, settings, monkeypatch):
    monkeypatch.setattr(backend.FakeHttp, "logs_from", logs_from)
    longer = settings.model_copy(update={"catchup_hours": 72, "retention_days": 1})
    memory = MemoryManager(engine, longer, facts_model=AppendingModel())
    await memory.start()
    bot = ElefantBot(
        memory=memory,
        responder=Responder(
            memory.facts, memory.recollection, memory.directory, router=None, chatter=chat, policy="anyone"
        ),
        settings=memory.settings,
        sync_commands=False,
    )
    dpytest.configure(bot, members=["alice"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    try:
        config = dpytest.get_config()
        general, alice = config.channels[0], config.members[0]
        said_while_away(general, alice, "two days ago", ago=timedelta(hours=48))
        recent = said_while_away(general, alice, "an hour ago", ago=timedelta(hours=1))
        await catch_up(bot)
        assert set(await stored(engine)) == {recent}
    finally:
        await bot.catch_up.cancel()
        await dpytest.empty_queue()
        await memory.close()


async def test_no_catch_up_when_it_is_turned_off(engine, settings, monkeypatch):
    monkeypatch.setattr(backend.FakeHttp, "logs_from", logs_from)
    memory = MemoryManager(engine, settings.model_copy(update={"catchup_hours": 0}), facts_model=AppendingModel())
    await memory.start()
    bot = ElefantBot(
        memory=memory,
        responder=Responder(
            memory.facts, memory.recollection, memory.directory, router=None, chatter=chat, policy="anyone"
        ),
        settings=memory.settings,
        sync_commands=False,
    )
    dpytest.configure(bot, members=["alice"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    config = dpytest.get_config()
    said_while_away(config.channels[0], config.members[0], "missed", ago=timedelta(minutes=1))
    await catch_up(bot)
    assert await stored(engine) == {}
    await dpytest.empty_queue()
    await memory.close()
