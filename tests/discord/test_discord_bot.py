"""Spans bot/discord_bot.py and what it wires (the Cogs, the invite, sync, the stop): Discord as it really behaves.

Minimal intents, no member download, sharding, defer before database work, questions that expire visibly, the
invite link, sync only when the command tree changed, Windows-safe stop, /healthz following the gateway.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import logging
import signal
from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

import discord
import discord.ext.test as dpytest
import pytest
from click.testing import CliRunner
from discord.ext import commands

import bot.cogs.replies as replies
from bot import lifecycle
from bot.app import open_app
from bot.cli import main
from bot.discord_bot import ElefantBot, ShardedElefantBot, make_bot
from bot.memory.clock import Clock
from bot.memory.manager import MemoryManager
from bot.metrics.server import serve_metrics
from bot.reply.respond import Responder
from bot.settings import ConfigError, Settings, load_settings
from db.models import ChatMessage
from fakes.models import model_stack
from tests.discord.fake_discord import APPLICATION_ID, GOOD_TOKEN, FakeDiscord, point_discord_py_at
from tests.discord.interactions import Interactions
from tests.discord.test_commands import count, only, seed
from tests.metrics.scrape import scrape


def plain_settings(**values) -> Settings:
    return Settings(_env_file=None, discord_token=None, gemini_api_key=None, **values)  # type: ignore[call-arg]


def bare_bot(settings: Settings, **kw) -> ElefantBot | ShardedElefantBot:
    """A bot object only (nothing it holds is used before it connects)."""
    return make_bot(memory=None, responder=None, settings=settings, **kw)  # type: ignore[arg-type]


def test_the_bot_asks_for_three_intents_and_downloads_no_members():
    shipped = bare_bot(plain_settings())
    assert shipped.intents == discord.Intents(guilds=True, guild_messages=True, message_content=True)
    assert not shipped.intents.members and not shipped.intents.presences and not shipped.intents.typing
    assert shipped._connection._chunk_guilds is False  # no member download at start
    assert shipped._connection.member_cache_flags.value == discord.MemberCacheFlags.from_intents(shipped.intents).value
    with_members = bare_bot(plain_settings(discord_members_intent=True))
    assert with_members.intents.members and with_members._connection._chunk_guilds is False


def test_shards_are_set_by_settings():
    assert not isinstance(bare_bot(plain_settings()), commands.AutoShardedBot)  # one connection by default
    chosen = bare_bot(plain_settings(shard_count=4, shard_ids="2,3"))
    assert isinstance(chosen, commands.AutoShardedBot)
    assert (chosen.shard_count, chosen.shard_ids) == (4, [2, 3])
    automatic = bare_bot(plain_settings(shard_count="auto"))
    assert isinstance(automatic, commands.AutoShardedBot) and automatic.shard_count is None  # Discord's advice


@pytest.mark.parametrize(
    ("env", "sentence"),
    [
        ({"SHARD_IDS": "1"}, "SHARD_IDS needs SHARD_COUNT, the total number of shards (a number)."),
        ({"SHARD_COUNT": "2", "SHARD_IDS": "0,2"}, "SHARD_IDS are numbered from 0 to SHARD_COUNT - 1 (1)."),
        ({"SHARD_COUNT": "4", "SHARD_IDS": "one"}, "Setting SHARD_IDS is invalid: 'one' is not a comma-separated"),
    ],
)
def test_wrong_shard_settings_are_one_sentence(monkeypatch, tmp_path, env, sentence):
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(raised.value).startswith(sentence) and "\n" not in str(raised.value)


@pytest.fixture
async def bot(engine, settings):
    settings = settings.model_copy(update={"memory_wait_seconds": 60})
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=Clock())
    await memory.start()
    responder = Responder(
        memory.facts,
        memory.recollection,
        memory.directory,
        router=None,
        chatter=lambda request, context: "ok",
        policy="anyone",
    )
    bot = ElefantBot(memory=memory, responder=responder, settings=settings, sync_commands=False)
    dpytest.configure(bot, text_channels=["general", "staff"], members=["alice", "bob"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    yield bot
    await dpytest.empty_queue()
    await memory.close()


@pytest.fixture
def people():
    return tuple(dpytest.get_config().members)


@pytest.fixture
def slash(bot):
    guild = dpytest.get_config().guilds[0]
    return Interactions(bot, guild, discord.utils.get(guild.text_channels, name="general"))


class Watched:
    """MemoryManager, with every awaited call noted in the interaction's event log (when it happens)."""

    FACES = frozenset({"intake", "facts", "recollection", "admin", "directory"})

    def __init__(self, memory: object, events: list[str], prefix: str = "memory") -> None:
        self._memory, self._events, self._prefix = memory, events, prefix

    def __getattr__(self, name):
        value = getattr(self._memory, name)
        if name in self.FACES:
            return Watched(value, self._events, f"{self._prefix}.{name}")
        if not inspect.iscoroutinefunction(value):
            return value

        async def noted(*args, **kwargs):
            self._events.append(f"{self._prefix}.{name}")
            return await value(*args, **kwargs)

        return noted


@pytest.mark.parametrize(
    ("path", "options", "admin"),
    [
        ("memory show", {}, False),
        ("memory history", {}, False),
        ("memory export", {}, False),
        ("memory optout", {}, False),
        ("memory optin", {}, False),
        ("memory forget-me", {}, False),
        ("memory-admin stats", {}, True),
        ("memory-admin revert", {"revision": 1}, True),
        ("memory-admin channel", {"mode": "exclude"}, True),
        ("memory-admin timezone", {"zone": "Asia/Tokyo"}, True),
        ("memory-admin purge all", {}, True),
    ],
)
async def test_no_slash_command_touches_the_database_before_discord_has_an_answer(
    bot, people, slash, path, options, admin
):
    alice, bob = people
    await seed(bot, alice, bob)
    if path.endswith("revert"):
        options = {"user": alice, **options}
    if path.endswith("channel"):
        options = {"channel": slash.channel, **options}
    events = slash.adapter.events
    for cog in (bot.get_cog("MemoryCommands"), bot.get_cog("AdminCommands")):
        for face in Watched.FACES:
            if hasattr(cog, f"_{face}"):
                setattr(cog, f"_{face}", Watched(getattr(cog, f"_{face}"), events, f"memory.{face}"))
    await slash.run(path, bob, admin=admin, **options)
    assert events and events[0] in {"defer", "respond"}, events  # Discord allows 3 s; databases may take longer
    assert any(e.startswith("memory.") for e in events) or path.endswith(("forget-me", "purge all"))


@pytest.mark.parametrize("path", ["memory forget-me", "memory optout"])
async def test_an_unanswered_question_greys_out_its_buttons_and_says_nothing_changed(
    bot, people, slash, monkeypatch, path
):
    alice, bob = people
    await seed(bot, alice, bob)
    monkeypatch.setattr(replies, "CONFIRM_SECONDS", 0.3)
    question = only(await slash.run(path, alice))
    assert question.buttons and not question.disabled
    for _ in range(40):
        if slash.adapter.sent[-1].kind == "edit":
            break
        await asyncio.sleep(0.05)
    expired = slash.adapter.sent[-1]
    assert expired.kind == "edit" and expired.ephemeral
    assert expired.content.startswith(question.content)
    assert expired.content.endswith("**No answer within 0.3 seconds, so nothing was changed.**")
    assert expired.disabled == set(question.buttons)
    assert expired.allowed_mentions == {"parse": []}  # AllowedMentions.none() on the edit too
    assert await count(bot, ChatMessage, user_id=alice.id) == 2


def token_for(application_id: int) -> str:
    return base64.b64encode(str(application_id).encode()).decode().rstrip("=") + ".GhIjKl.secret"


def test_invite_prints_the_link_with_scopes_and_permissions(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISCORD_TOKEN", token_for(APPLICATION_ID))
    result = CliRunner().invoke(main, ["invite"])
    assert result.exit_code == 0, result.output
    url = urlparse(result.stdout.splitlines()[0])
    query = parse_qs(url.query)
    assert url.netloc == "discord.com" and query["client_id"] == [str(APPLICATION_ID)]
    assert query["scope"] == ["bot applications.commands"]
    granted = {name for name, on in discord.Permissions(int(query["permissions"][0])) if on}
    # read_messages is what discord.py calls View Channels.
    assert granted == {"read_messages", "read_message_history", "send_messages", "send_messages_in_threads"}
    assert "View Channels, Read Message History, Send Messages, Send Messages in Threads" in result.stderr
    other = CliRunner().invoke(main, ["invite", "--client-id", "1234"])
    assert "client_id=1234" in other.stdout
    monkeypatch.delenv("DISCORD_TOKEN")
    missing = CliRunner().invoke(main, ["invite"])
    assert missing.exit_code == 2 and "--client-id" in missing.output


@pytest.fixture
async def fake_discord():
    server = await FakeDiscord().start()
    yield server
    await server.stop()


async def test_commands_are_synced_only_when_the_tree_changed(fake_discord, monkeypatch, tmp_path, settings):
    import discord.gateway
    import discord.http

    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)  # restored after the test
    monkeypatch.setattr(
        discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    )
    point_discord_py_at(fake_discord.url)

    async def start_once(**changes) -> None:
        changed = settings.model_copy(update={"data_dir": tmp_path / "data", **changes})
        faces = SimpleNamespace(intake=None, facts=None, recollection=None, admin=None, directory=None)
        bot = ElefantBot(memory=faces, responder=None, settings=changed)  # type: ignore[arg-type]
        async with bot:
            await bot.login(GOOD_TOKEN)  # login runs setup_hook, which syncs if needed

    await start_once()
    assert [path for path, _ in fake_discord.synced] == [f"/api/v10/applications/{APPLICATION_ID}/commands"]
    assert {c["name"] for c in fake_discord.synced[0][1]} == {"memory", "memory-admin"}
    await start_once()
    assert len(fake_discord.synced) == 1  # unchanged: not sent again
    await start_once(dev_guild_id=2**60 + 5)
    assert fake_discord.synced[-1][0] == f"/api/v10/applications/{APPLICATION_ID}/guilds/{2**60 + 5}/commands"
    assert (tmp_path / "data" / "command-tree.sha256").is_file()


async def test_shutdown_works_where_the_loop_has_no_signal_handlers(monkeypatch):
    loop = asyncio.get_running_loop()

    def unavailable(*args, **kwargs):
        raise NotImplementedError  # what ProactorEventLoop does on Windows

    monkeypatch.setattr(loop, "add_signal_handler", unavailable)
    before = signal.getsignal(signal.SIGTERM)
    stop = asyncio.Event()
    restore = lifecycle.stop_on_signals(stop)
    try:
        signal.raise_signal(signal.SIGTERM)
        await asyncio.wait_for(stop.wait(), timeout=2)
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) == before


async def test_healthz_is_ready_while_the_gateway_is_connected(fake_discord, monkeypatch, tmp_path, settings):
    """`connected()` as /healthz asks it: not before READY, yes after, not once Discord's side went away."""
    import discord.gateway
    import discord.http

    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)  # restored after the test
    monkeypatch.setattr(
        discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    )
    point_discord_py_at(fake_discord.url)
    fake_discord.privileged_intents = True  # the application allows the message-content intent the bot asks for
    served = settings.model_copy(update={"data_dir": tmp_path / "data", "metrics_port": 0, "embedding_model": None})

    async def health_until(status: int) -> str:
        while True:  # bounded by the wait_for below
            code, body = await scrape(server.port, "/healthz")
            if code == status:
                return body
            await asyncio.sleep(0.05)

    async with open_app(served) as app:
        the_bot = make_bot(memory=app.memory, responder=app.responder, settings=served)
        async with the_bot, serve_metrics(served, app, gateway=the_bot.connected) as server:
            assert server is not None
            assert '"gateway": "disconnected"' in await health_until(503)  # not connected yet
            running = asyncio.create_task(the_bot.start(GOOD_TOKEN))
            try:
                body = await asyncio.wait_for(health_until(200), 30)
                assert '"gateway": "connected"' in body
                await fake_discord.stop()  # the gateway's connection is cut; discord.py tries to reconnect
                body = await asyncio.wait_for(health_until(503), 30)
                assert '"gateway": "disconnected"' in body and '"storage": "ok"' in body
            finally:
                await the_bot.close()
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)


async def test_a_gateway_outage_is_one_disconnected_line_and_one_connected_again_line(caplog):
    caplog.set_level(logging.DEBUG, logger="bot.discord_bot")
    shipped = bare_bot(plain_settings())
    requested: list[bool] = []
    shipped.catch_up = SimpleNamespace(request=lambda: requested.append(True))  # type: ignore[assignment]
    await shipped.on_ready()  # the first connect: who we are
    for _ in range(30):  # discord.py dispatches "disconnect" at every failed reconnect attempt
        await shipped.on_disconnect()
    await shipped.on_resumed()
    await shipped.on_disconnect()
    await shipped.on_ready()  # a new session after a gap Discord would not resume
    said = [r.getMessage() for r in caplog.records if r.name == "bot.discord_bot" and r.levelno >= logging.INFO]
    assert len(said) == 5, said
    assert said[0].startswith("connected as")
    assert said[1] == "Discord disconnected: the gateway connection closed; reconnecting"
    assert said[2].startswith("Discord connected again after") and "30 failed attempts" in said[2]
    assert said[2].endswith("session resumed; reading back what was said meanwhile")
    assert said[4].endswith("new session; reading back what was said meanwhile")
    assert len(requested) == 3  # every (re)connect reads back what was missed
