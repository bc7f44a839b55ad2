"""Spans bot/cogs/memory.py, admin.py and replies.py: /memory and /memory-admin through discord.py's command tree.

On both databases, with the offline provider.
"""

from __future__ import annotations

import discord
import discord.ext.test as dpytest
import pytest
from sqlalchemy import func, select

from bot.discord_bot import ElefantBot
from bot.memory.clock import Clock
from bot.memory.manager import MemoryManager
from bot.reply.respond import Responder
from db.deletion import remaining
from db.models import ChatMessage, UserFacts
from fakes.models import model_stack
from tests.discord.interactions import Interactions, Sent


@pytest.fixture
async def bot(engine, settings):
    settings = settings.model_copy(update={"memory_wait_seconds": 60})  # cache figures, not the latency guard
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
    config = dpytest.get_config()
    alice, bob = config.members
    return alice, bob


# AllowedMentions.none() as Discord receives it: @everyone, @here, users and roles all stay unpinged.
NOBODY = {"parse": []}


@pytest.fixture
def slash(bot):
    guild = dpytest.get_config().guilds[0]
    slash = Interactions(bot, guild, discord.utils.get(guild.text_channels, name="general"))
    yield slash
    # Every answer, question, button update and edit a test made the commands send: none may ping.
    assert [sent for sent in slash.adapter.sent if sent.allowed_mentions != NOBODY] == []


def only(sent: list[Sent]) -> Sent:
    """The single message a command answered with; always private, never pinging."""
    assert len(sent) == 1, sent
    assert sent[0].ephemeral, sent[0]
    assert sent[0].allowed_mentions == NOBODY, sent[0]
    return sent[0]


async def seed(bot, alice, bob):
    guild = dpytest.get_config().guilds[0]
    for text in ("planning the trip to Lisbon", "bought the train tickets"):
        await dpytest.message(text, member=alice)
    await dpytest.message("I will bring the map", member=bob)
    await bot.memory.facts.remember(guild.id, alice.id, f"<@{alice.id}> likes green tea", requested_by=alice.id)
    await bot.memory.facts.remember(guild.id, bob.id, f"<@{bob.id}> is a pilot", requested_by=alice.id)
    await bot.memory.flush()
    return guild


async def count(engine_or_bot, model, **where) -> int:
    async with engine_or_bot.memory.sessions() as session:
        query = select(func.count()).select_from(model)
        for column, value in where.items():
            query = query.where(getattr(model, column) == value)
        return int(await session.scalar(query) or 0)


def test_admin_group_is_hidden_by_default_and_both_are_guild_only(bot):
    payloads = {command.name: command.to_dict(bot.tree) for command in bot.tree.get_commands()}
    assert set(payloads) == {"memory", "memory-admin"}
    assert payloads["memory-admin"]["default_member_permissions"] == discord.Permissions(manage_guild=True).value
    assert payloads["memory"]["default_member_permissions"] is None  # members use it on themselves
    assert all(p["contexts"] == [0] for p in payloads.values())  # guild only
    admin = {o["name"] for o in payloads["memory-admin"]["options"]}
    assert admin == {"stats", "purge", "revert", "channel", "timezone"}
    member = {o["name"] for o in payloads["memory"]["options"]}
    assert member == {"show", "history", "export", "optout", "optin", "forget-me", "recap"}


@pytest.mark.parametrize(
    "path, options",
    [
        ("memory-admin stats", {}),
        ("memory-admin purge all", {}),
        ("memory-admin purge before", {"day": "2030-01-01"}),
        ("memory-admin timezone", {"zone": "Asia/Tokyo"}),
        ("memory-admin channel", {"mode": "exclude"}),
    ],
)
async def test_members_without_manage_server_are_refused_and_nothing_changes(bot, people, slash, path, options):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    if path.endswith("channel"):
        options = {"channel": slash.channel, **options}
    refusal = only(await slash.run(path, alice, **options))
    assert "Manage Server" in refusal.content and not refusal.buttons
    assert await count(bot, ChatMessage, guild_id=guild.id) == 3
    assert bot.memory.directory.zone(guild.id) == bot.settings.default_timezone
    assert bot.memory.channels.shared(guild.id, slash.channel.id)
    # The same command from an admin goes through (so the refusal above is the check, not a broken command).
    assert "Manage Server" not in only(await slash.run(path, bob, admin=True, **options)).content


async def test_show_history_and_export_on_yourself_are_private(bot, people, slash):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    shown = only(await slash.run("memory show", alice))
    assert shown.kind == "followup"  # deferred first: building a context may wait for the model
    assert f"{alice.display_name} likes green tea" in shown.content and "pilot" not in shown.content
    assert f"<@{alice.id}>" not in shown.content  # names, not pings

    history = only(await slash.run("memory history", alice))
    revision = (await bot.memory.facts.history(guild.id, alice.id))[0]
    assert f"`#{revision.id}`" in history.content and f"asked by {alice.display_name}" in history.content
    assert f"{alice.display_name} likes green tea" in history.content

    exported = only(await slash.run("memory export", alice))
    [(filename, body)] = exported.files.items()
    assert filename.endswith(".md") and str(alice.id) in filename
    text = body.decode()
    assert text.startswith(f"# What Elefant keeps about {alice.display_name}")
    assert f"{alice.display_name} likes green tea" in text and "pilot" not in text and "<@" not in text


async def test_looking_at_someone_else_needs_manage_server(bot, people, slash):
    alice, bob = people
    await seed(bot, alice, bob)
    for path in ("memory show", "memory history", "memory export"):
        refusal = only(await slash.run(path, alice, user=bob))
        assert "only look at your own" in refusal.content and not refusal.files
    shown = only(await slash.run("memory show", alice, admin=True, user=bob))
    assert f"{bob.display_name} is a pilot" in shown.content


async def test_forget_me_asks_first_and_then_deletes_everything(bot, people, slash, engine):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    question = only(await slash.run("memory forget-me", alice))
    assert set(question.buttons) == {"Delete everything", "Cancel"}
    cancelled = await slash.click(question, "Cancel", alice)
    assert cancelled[-1].content.startswith("Cancelled") and not cancelled[-1].buttons
    assert await count(bot, ChatMessage, user_id=alice.id) == 2

    question = only(await slash.run("memory forget-me", alice))
    assert "not for you" in only(await slash.click(question, "Delete everything", bob)).content
    assert await count(bot, ChatMessage, user_id=alice.id) == 2  # bob's click changed nothing

    done = await slash.click(question, "Delete everything", alice)
    assert done[-1].kind == "edit" and done[-1].ephemeral
    assert "2 messages" in done[-1].content and "1 facts entries" in done[-1].content
    async with bot.memory.sessions() as session:
        assert set((await remaining(session, guild.id, alice.id)).values()) == {0}
    assert await bot.memory.recollection.context(guild.id, alice.id) is None  # no cache kept it
    assert await count(bot, UserFacts, user_id=bob.id) == 1  # bob's facts are bob's


async def test_optout_stops_storing_and_offers_deletion_optin_resumes(bot, people, slash):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    offer = only(await slash.run("memory optout", alice))
    assert "don't store your messages" in offer.content
    await dpytest.message("this must not be stored", member=alice)
    await bot.memory.flush()
    assert await count(bot, ChatMessage, user_id=alice.id) == 2

    deleted = await slash.click(offer, "Delete what you kept", alice)
    assert "2 messages" in deleted[-1].content
    assert await count(bot, ChatMessage, user_id=alice.id) == 0
    assert await bot.memory.facts.get(guild.id, alice.id) is None

    assert "again" in only(await slash.run("memory optin", alice)).content
    await dpytest.message("back again", member=alice)
    await bot.memory.flush()
    assert await count(bot, ChatMessage, user_id=alice.id) == 1


async def test_admin_purges_ask_first_and_report_rows(bot, people, slash):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    staff = discord.utils.get(guild.text_channels, name="staff")
    await dpytest.message("staff only note", channel=staff, member=bob)
    await bot.memory.flush()

    bad = only(await slash.run("memory-admin purge before", bob, admin=True, day="last tuesday"))
    assert "YYYY-MM-DD" in bad.content and "Nothing was deleted" in bad.content and not bad.buttons

    question = only(await slash.run("memory-admin purge channel", bob, admin=True, channel=staff))
    assert "#staff" in question.content
    done = await slash.click(question, "Delete", bob, admin=True)
    assert done[-1].content == "Deleted the stored messages of #staff: 1 messages."
    assert await count(bot, ChatMessage, guild_id=guild.id) == 3

    question = only(await slash.run("memory-admin purge user", bob, admin=True, user=alice))
    done = await slash.click(question, "Delete", bob, admin=True)
    assert "2 messages" in done[-1].content and await count(bot, ChatMessage, user_id=alice.id) == 0

    question = only(await slash.run("memory-admin purge before", bob, admin=True, day="2999-01-01"))
    done = await slash.click(question, "Delete", bob, admin=True)
    assert "1 messages" in done[-1].content and await count(bot, ChatMessage, guild_id=guild.id) == 0

    question = only(await slash.run("memory-admin purge all", bob, admin=True))
    done = await slash.click(question, "Delete", bob, admin=True)
    assert "1 facts entries" in done[-1].content and await count(bot, UserFacts, guild_id=guild.id) == 0


async def test_revert_undoes_a_revision_and_explains_a_wrong_number(bot, people, slash):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    change = await bot.memory.facts.remember(guild.id, bob.id, "Bob flies gliders", requested_by=alice.id)
    wrong = only(await slash.run("memory-admin revert", alice, admin=True, user=bob, revision=999_999))
    assert "no revision #999999" in wrong.content
    done = only(await slash.run("memory-admin revert", alice, admin=True, user=bob, revision=change.revision_id))
    assert f"Undid revision #{change.revision_id}" in done.content and "gliders" not in done.content
    facts = await bot.memory.facts.get(guild.id, bob.id)
    assert facts is not None and "pilot" in facts and "gliders" not in facts


async def test_channel_scope_timezone_and_stats(bot, people, slash):
    alice, bob = people
    guild = await seed(bot, alice, bob)
    excluded = only(await slash.run("memory-admin channel", bob, admin=True, channel=slash.channel, mode="exclude"))
    assert "**exclude**" in excluded.content and not bot.memory.channels.shared(guild.id, slash.channel.id)
    only(await slash.run("memory-admin channel", bob, admin=True, channel=slash.channel, mode="auto"))
    assert bot.memory.channels.shared(guild.id, slash.channel.id)

    unknown = only(await slash.run("memory-admin timezone", bob, admin=True, zone="Mars/Olympus"))
    assert "not a time zone I know" in unknown.content and bot.memory.directory.zone(guild.id) == "UTC"
    assert "Asia/Tokyo" in only(await slash.run("memory-admin timezone", bob, admin=True, zone="Asia/Tokyo")).content
    assert bot.memory.directory.zone(guild.id) == "Asia/Tokyo"
    choices = await slash.autocomplete("memory-admin timezone", bob, "zone", zone="berl")
    assert [c["value"] for c in choices] == ["Europe/Berlin"]

    await bot.memory.recollection.context(guild.id, alice.id)
    await bot.memory.recollection.context(guild.id, alice.id)
    stats = only(await slash.run("memory-admin stats", bob, admin=True)).content
    assert "Messages stored: 3 from 2 members; facts about 2 members" in stats
    assert "merged context 50% of 2" in stats and "Database size" in stats


async def test_recap_is_private_links_what_matters_and_refuses_an_unreadable_time(bot, people, slash):
    alice, bob = people
    guild = dpytest.get_config().guilds[0]
    general, staff = guild.text_channels
    opened = await dpytest.message("who's in for the chess tournament on saturday? we need eight", member=bob)
    await dpytest.message("and the tournament bracket should be double elimination", member=bob)
    await dpytest.message("the bake sale moved to sunday, bring cookies", channel=staff, member=bob)
    await bot.memory.flush()

    told = only(await slash.run("memory recap", alice))
    assert told.kind == "followup"  # deferred first: a recap may wait for the model
    assert told.content.startswith("Recap of the server in the last 7 days")  # alice never spoke: the longest
    assert "tournament" in told.content and "bake sale" in told.content
    assert f"<https://discord.com/channels/{guild.id}/{general.id}/{opened.id}>" in told.content

    only_staff = only(await slash.run("memory recap", alice, channel=staff, since="yesterday"))
    assert only_staff.content.startswith(f"Recap of <#{staff.id}> since yesterday")
    assert "bake sale" in only_staff.content and "tournament" not in only_staff.content

    refused = only(await slash.run("memory recap", alice, since="blorp"))
    assert refused.kind == "response"  # at once, nothing looked up
    assert refused.content == ("I couldn't read “blorp” as a time; try friday, yesterday, 3 days, 14:00 or 2026-11-10.")
