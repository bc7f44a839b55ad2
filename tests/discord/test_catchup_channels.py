"""Catch-up through dpytest's gateway (both databases), channel by channel: a private channel's and a thread's
missed messages keep their scope, the bot's own messages are not read back as speech, a channel whose connection
drops (or storage is away) does not stop the others, deletions are applied only inside a span Discord answered in
full, and a READY during a pass asks for one more pass, never a second at once.

The bot, "Discord" (dpytest's channel log with an API-true `logs_from`) and the helpers are tests/discord/
test_catchup.py's.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import aiohttp
import discord
import discord.ext.test as dpytest
from discord.ext.test import backend
from discord.ext.test import factories as facts
from sqlalchemy import select, text

from db.models import ChannelPrivacy
from tests.discord import gateway, test_catchup
from tests.discord.test_catchup import catch_up, said_while_away, stored

bot = test_catchup.bot  # the fixture: a bot on dpytest whose history follows Discord's API

SECRET = "the vault code is 4242"


def staff_only(channel: discord.TextChannel) -> None:
    """Hide the channel from @everyone and let the bot in, as a server would. (dpytest's own
    `set_permission_overrides` writes the overwrite's type as a word, which discord.py reads as neither a role nor
    a member, so a member's overwrite never applies.)"""
    seen = discord.Permissions(view_channel=True, read_message_history=True).value
    data = facts.dict_from_channel(channel)
    data["permission_overwrites"] = [
        {"id": str(channel.guild.id), "type": 0, "allow": "0", "deny": str(seen)},
        {"id": str(channel.guild.me.id), "type": 1, "allow": str(seen), "deny": "0"},
    ]
    backend.get_state().parse_channel_update(data)
    assert not channel.permissions_for(channel.guild.default_role).read_messages
    assert channel.permissions_for(channel.guild.me).read_message_history


def failing(channels: dict[int, int], error: Exception, *, times: int = 1) -> None:
    """History of each channel in `channels` fails with `error` at its request number `channels[id]` (0: the first)
    and the `times - 1` requests after it; then Discord answers again."""
    serve = backend.FakeHttp.logs_from
    pages: dict[int, int] = {}

    async def logs_from(self, channel_id, limit, before=None, after=None, around=None):
        page = pages[channel_id] = pages.get(channel_id, -1) + 1
        if channel_id in channels and channels[channel_id] <= page < channels[channel_id] + times:
            raise error
        return await serve(self, channel_id, limit, before=before, after=after, around=around)

    backend.FakeHttp.logs_from = logs_from  # the bot fixture's monkeypatch restores dpytest's own afterwards


async def test_private_channels_and_threads_read_back_keep_their_scope(bot, engine):
    config = dpytest.get_config()
    general, staff = config.channels[0], config.channels[1]
    alice, bob = config.members
    guild = general.guild
    staff_only(staff)
    vault = gateway.thread_create(general, "vault", private=True, owner=alice)
    said_while_away(staff, alice, f"staff only: {SECRET}", ago=timedelta(minutes=6))
    said_while_away(vault, bob, f"in the private thread: {SECRET}", ago=timedelta(minutes=5))
    said_while_away(general, bob, "the vault is in the basement", ago=timedelta(minutes=4))
    await catch_up(bot)

    assert len(await stored(engine)) == 3  # the thread was read too
    async with bot.memory.sessions() as session:
        scopes = await session.execute(
            select(ChannelPrivacy.channel_id, ChannelPrivacy.is_private, ChannelPrivacy.parent_id)
        )
        assert set(scopes) == {(general.id, False, None), (staff.id, True, None), (vault.id, True, general.id)}
    public = await bot.memory.recollection.recall(guild.id, "vault code", channel_id=general.id, limit=50)
    assert any("basement" in hit.text for hit in public)  # the public channel's own words are found there
    assert not any("4242" in hit.text for hit in public)
    inside = await bot.memory.recollection.recall(guild.id, "vault code", channel_id=staff.id, limit=50)
    assert any("4242" in hit.text for hit in inside)


async def test_the_bots_own_messages_are_not_read_back_as_speech(bot, engine):
    # With other bots' messages wanted, only the author check keeps the bot's own out: its replies are stored by
    # the listener as it sends them, with their sources, and one read back here would lack them.
    bot.settings = bot.settings.model_copy(update={"ingest_other_bots": True})
    config = dpytest.get_config()
    general, alice = config.channels[0], config.members[0]
    asked = said_while_away(general, alice, "did anyone see my keys?", ago=timedelta(minutes=3))
    said_while_away(general, bot.user, "an answer sent before the crash", ago=timedelta(minutes=2))
    await catch_up(bot)
    assert set(await stored(engine)) == {asked}


async def test_a_dropped_connection_holds_one_channel_back_and_the_others_go_on(bot, engine, caplog):
    config = dpytest.get_config()
    general, staff = config.channels[0], config.channels[1]
    alice = config.members[0]
    first = said_while_away(general, alice, "unreachable for now", ago=timedelta(minutes=3))
    later = said_while_away(staff, alice, "read all the same", ago=timedelta(minutes=2))
    failing({general.id: 0}, aiohttp.ServerDisconnectedError(), times=2)  # general is read first
    read: list[int] = []
    store = bot.catch_up._store

    async def noting(message: discord.Message) -> bool:
        read.append(message.id)
        return await store(message)

    bot.catch_up._store = noting
    await catch_up(bot)
    assert read == [later, first]  # staff was not held up by general's failures; general was read once it answered
    assert set(await stored(engine)) == {first, later}
    assert f"catching up on channel {general.id} of guild {general.guild.id} failed" in caplog.text


async def test_deletions_only_inside_a_span_discord_answered_in_full(bot, engine):
    config = dpytest.get_config()
    general, staff = config.channels[0], config.channels[1]
    alice = config.members[0]
    early = said_while_away(general, alice, "eight hours ago", ago=timedelta(hours=8))
    recent = said_while_away(general, alice, "half an hour ago", ago=timedelta(minutes=30))
    newest = said_while_away(general, alice, "a minute ago", ago=timedelta(minutes=1))
    busy = [said_while_away(staff, alice, f"staff {i}", ago=timedelta(minutes=20, seconds=-i)) for i in range(150)]
    await catch_up(bot)
    assert set(await stored(engine)) == {early, recent, newest, *busy}

    def deleted_in_discord(channel: discord.abc.GuildChannel, message_id: int) -> None:
        log = backend._cur_config.messages[channel.id]
        log[:] = [m for m in log if int(m["id"]) != message_id]

    deleted_in_discord(general, early)  # before the verified span (CATCHUP_VERIFY_HOURS, 6, before the newest)
    deleted_in_discord(general, recent)  # inside it
    deleted_in_discord(staff, busy[10])  # on the first page of a history whose second page is refused
    failing({staff.id: 1}, discord.Forbidden(_Response(403), "Missing Access"))  # no later try is answered
    await catch_up(bot)
    assert set(await stored(engine)) == {early, newest, *busy}


class _Response:
    def __init__(self, status: int) -> None:
        self.status, self.reason = status, "fake"


async def test_storage_away_pauses_a_catch_up_in_one_line_and_it_finishes_once_storage_is_back(bot, engine, caplog):
    config = dpytest.get_config()
    general, alice = config.channels[0], config.members[0]
    missed = said_while_away(general, alice, "said while both were down", ago=timedelta(minutes=2))
    caplog.set_level(logging.INFO, logger="bot.catchup")
    async with engine.begin() as connection:  # where catch-up would begin cannot be read
        await connection.execute(text("ALTER TABLE chat_history RENAME TO chat_history_away"))
    try:
        await bot.on_ready()
        async with asyncio.timeout(30):  # a hang guard
            while "catching up paused" not in caplog.text:  # noqa: ASYNC110 - the log is what a person reads
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # it keeps trying meanwhile, quietly
    finally:
        async with engine.begin() as connection:
            await connection.execute(text("ALTER TABLE chat_history_away RENAME TO chat_history"))
    async with asyncio.timeout(30):  # no new READY: the same catch-up goes on by itself (issue 37, item 1)
        await bot.catch_up.wait()
    await bot.memory.flush()
    assert set(await stored(engine)) == {missed}
    paused = [r for r in caplog.records if "catching up paused: storage is away" in r.getMessage()]
    assert len(paused) == 1 and paused[0].levelname == "WARNING" and paused[0].exc_info is None
    assert "chat_history" in paused[0].getMessage() and "SELECT" not in paused[0].getMessage()  # the cause, no SQL
    assert sum("catching up again" in r.getMessage() for r in caplog.records) == 1
    assert "background work" not in caplog.text  # not a task that died with a traceback


async def test_a_ready_during_a_catch_up_asks_for_one_more_pass_not_a_second_at_once(bot, engine):
    config = dpytest.get_config()
    said_while_away(config.channels[0], config.members[0], "missed", ago=timedelta(minutes=1))
    serve = backend.FakeHttp.logs_from
    reading: list[int] = []
    first_page = asyncio.Event()
    most = 0

    async def logs_from(self, channel_id, limit, before=None, after=None, around=None):
        nonlocal most
        reading.append(channel_id)
        first_page.set()
        most = max(most, len(reading))
        await asyncio.sleep(0.05)  # a page takes a while, as on Discord: the next READY comes meanwhile
        reading.remove(channel_id)
        read.append(channel_id)
        return await serve(self, channel_id, limit, before=before, after=after, around=around)

    read: list[int] = []
    backend.FakeHttp.logs_from = logs_from
    await bot.on_ready()
    async with asyncio.timeout(30):  # a hang guard
        await first_page.wait()
    await bot.on_resumed()  # a reconnect while the first pass reads, and another
    await bot.on_ready()
    await bot.catch_up.wait()
    assert most == 1  # never two passes at once
    channels = [c.id for c in config.guilds[0].text_channels]
    assert sorted(read) == sorted(2 * channels)  # the pass under way, then one more for both requests
