"""The live listener with real discord.py threads and messages: thread scope, system messages, files, forwards.

Threads and messages come from gateway payloads parsed by discord.py itself (tests/discord/gateway.py), so
`channel_scope` and `speech_of` see exactly the objects Discord would give them.
"""

from __future__ import annotations

from types import SimpleNamespace

import discord
import discord.ext.test as dpytest
import pytest
from sqlalchemy import select

from bot.cogs.listener import channel_scope, speech_of
from bot.discord_bot import ElefantBot
from bot.memory.manager import MemoryManager
from bot.reply.model_turns import ModelTurns
from bot.reply.respond import Responder
from db.models import ChatMessage
from db.records import Kind
from fakes.models import model_stack
from tests.discord import gateway

SECRET = "the vault combination is 31-41-59"


@pytest.fixture
async def bot(engine, settings):
    settings = settings.model_copy(update={"memory_wait_seconds": 600})
    llm = model_stack()  # offline: summaries quote what was said, so a leak shows verbatim
    memory = MemoryManager(engine, settings, llm=llm)
    await memory.start()
    turns = ModelTurns(llm, memory.directory, settings)
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=turns.route, chatter=turns.chat, policy="anyone"
    )
    bot = ElefantBot(memory=memory, responder=responder, settings=settings, sync_commands=False)
    dpytest.configure(bot, text_channels=["general", "staff"], members=["alice", "bob"])
    await bot._async_setup_hook()
    await bot.setup_hook()
    yield bot
    await dpytest.empty_queue()
    await memory.close()


def place(name: str) -> discord.TextChannel:
    guild = dpytest.get_config().guilds[0]
    channel = discord.utils.get(guild.text_channels, name=name)
    assert channel is not None
    return channel


async def rows(bot: ElefantBot) -> list[tuple[int, str, int]]:
    await bot.memory.flush()
    async with bot.memory.sessions() as session:
        found = await session.execute(
            select(ChatMessage.channel_id, ChatMessage.message_text, ChatMessage.kind).order_by(ChatMessage.message_id)
        )
        return [tuple(row) for row in found]  # type: ignore[misc]


async def seen_from(bot: ElefantBot, channel: discord.TextChannel, query: str) -> str:
    """Everything a reader in `channel` can get: recall, every member's context, today's summaries, exports."""
    memory = bot.memory
    guild = channel.guild
    assert memory.summaries is not None
    await memory.flush()  # ingestion is write-behind: what was just said is stored first
    seen = [hit.text for hit in await memory.recollection.recall(guild.id, query, channel_id=channel.id, limit=50)]
    for member in dpytest.get_config().members:
        seen.append(await memory.recollection.context(guild.id, member.id) or "")
        seen.append(await memory.admin.export(guild.id, member.id))
    seen += (await memory.summaries.today(guild.id, memory.directory.now())).values()
    return "\n".join(seen)


async def say(channel, author, content: str = "", **payload) -> dict:
    data = gateway.message_create(channel, author, content, **payload)
    await dpytest.run_all_events()
    return data


async def test_a_private_thread_of_a_public_channel_stays_in_the_thread(bot):
    general = place("general")
    alice, bob = dpytest.get_config().members
    vault = gateway.thread_create(general, "vault-talk", private=True, owner=alice)
    # The trap the field notes describe: a thread answers for its parent's permissions.
    assert vault.permissions_for(general.guild.default_role).read_messages
    assert channel_scope(vault, general.guild.default_role) == (True, general.id, "private_thread")

    await say(general, alice, "kiwi smoothies after the run")
    await say(vault, alice, SECRET)
    await say(vault, bob, "noted: 31-41-59")
    assert [text for _, text, _ in await rows(bot)] == ["kiwi smoothies after the run", SECRET, "noted: 31-41-59"]

    public = await seen_from(bot, general, "vault combination")
    assert "kiwi" in public  # the public channel is visible: the check below can fail
    assert "31-41-59" not in public
    await say(general, bob, f"<@{bot.user.id}> do you remember the vault combination?")
    answer = dpytest.get_message()
    assert "31-41-59" not in answer.content
    inside = await bot.memory.recollection.recall(general.guild.id, "vault combination", channel_id=vault.id)
    assert any("31-41-59" in hit.text for hit in inside)  # stored, and found where it was said


async def test_a_public_thread_of_a_hidden_channel_is_hidden_too(bot):
    general, staff = place("general"), place("staff")
    alice, _ = dpytest.get_config().members
    await dpytest.set_permission_overrides(staff.guild.default_role, staff, read_messages=False)
    rota = gateway.thread_create(staff, "rota", private=False, owner=alice)
    trip = gateway.thread_create(general, "trip", private=False, owner=alice)
    assert channel_scope(rota, staff.guild.default_role) == (True, staff.id, "public_thread")
    assert channel_scope(trip, general.guild.default_role) == (False, general.id, "public_thread")

    await say(rota, alice, "rota: alice covers the saturday gate")
    await say(trip, alice, "trip: the saturday bus leaves at seven")
    seen = await seen_from(bot, general, "saturday")
    assert "bus leaves at seven" in seen
    assert "rota" not in seen and "gate" not in seen


SYSTEM = [
    (7, ""),  # GUILD_MEMBER_JOIN
    (6, ""),  # CHANNEL_PINNED_MESSAGE
    (18, "trip planning"),  # THREAD_CREATED: its content is the thread's name
    (3, ""),  # CALL
    (4, "general-chat"),  # CHANNEL_NAME_CHANGE
    (8, "3"),  # a boost, three times
    (21, ""),  # THREAD_STARTER_MESSAGE: not "system" to discord.py, and says nothing
    (46, ""),  # POLL_RESULT: not "system" to discord.py either
]


async def test_system_messages_are_not_stored_at_all(bot):
    general = place("general")
    alice, bob = dpytest.get_config().members
    await say(general, alice, "real words first")
    for kind, content in SYSTEM:
        await say(general, bob, content, type=kind)
    await say(general, alice, "real words last")
    assert [text for _, text, _ in await rows(bot)] == ["real words first", "real words last"]
    assert bot.memory.summaries is not None
    assert set(await bot.memory.summaries.today(general.guild.id, bot.memory.directory.now())) == {alice.id}


async def test_files_stickers_and_forwards_are_stored_with_their_words(bot):
    general = place("general")
    alice, bob = dpytest.get_config().members
    await say(general, alice, attachments=[gateway.attachment("plan.pdf")])
    await say(general, bob, stickers=[gateway.sticker("Wave")])
    elsewhere = gateway.snowflake()
    forward = await say(
        general,
        alice,
        reference=gateway.forward_reference(gateway.snowflake(), elsewhere, general.guild.id),
        snapshot=gateway.snapshot_of("meet at the north gate at 6", attachments=[gateway.attachment("map.png")]),
    )
    await say(
        general,
        bob,
        reference=gateway.forward_reference(gateway.snowflake(), elsewhere, general.guild.id),
        snapshot=gateway.snapshot_of("", stickers=[gateway.sticker("Thumbs Up")]),
    )
    assert [text for _, text, _ in await rows(bot)] == [
        "[attachment: plan.pdf]",
        "[sticker: Wave]",
        "[forwarded message] meet at the north gate at 6 [attachment: map.png]",
        "[forwarded message] [sticker: Thumbs Up]",
    ]
    async with bot.memory.sessions() as session:
        stored = await session.get(ChatMessage, int(forward["id"]))
    assert stored is not None and stored.reply_to_id is None  # a forward is not a reply (as on import)


async def test_the_bots_own_messages_are_stored_once_as_its_replies(bot):
    # With other bots' messages wanted, only the author check keeps the bot's own messages out of speech.
    bot.settings = bot.settings.model_copy(update={"ingest_other_bots": True})
    general = place("general")
    alice, _ = dpytest.get_config().members
    await say(general, alice, f"{bot.settings.bot_name}, do you remember the kiwi smoothies?")
    reply = dpytest.get_message()
    stored = await rows(bot)
    assert [(text, kind) for _, text, kind in stored] == [
        (f"{bot.settings.bot_name}, do you remember the kiwi smoothies?", Kind.ADDRESSED),
        (reply.content, Kind.BOT),  # by record_reply, with its sources; on_message skipped it
    ]
    # A message of the bot's arriving from the gateway (its own send echoed back) is not ingested as speech.
    await say(general, bot.user, "an echo of something the bot said")
    assert len(await rows(bot)) == 2


async def test_forwarding_the_bots_message_is_not_talking_to_the_bot(bot):
    general = place("general")
    alice, bob = dpytest.get_config().members
    await say(general, alice, f"{bot.settings.bot_name}, remember that I like kiwi")
    said = dpytest.get_message()
    await say(
        general,
        bob,
        reference=gateway.forward_reference(said.id, general.id, general.guild.id),
        snapshot=gateway.snapshot_of(said.content),
    )
    assert dpytest.verify().message().nothing(), dpytest.get_message().content  # no answer to a forward
    assert speech_of(said)  # (the bot's message had words to forward)


async def test_a_message_in_a_channel_discord_py_does_not_know_is_kept_private(bot):
    # A thread the bot never saw created (missed THREAD_CREATE): discord.py hands over a PartialMessageable,
    # which cannot say who may read it. Memory fails closed: stored, but only for that channel.
    general = place("general")
    alice, _ = dpytest.get_config().members
    unknown = SimpleNamespace(id=gateway.snowflake(), guild=general.guild)
    secret = "unknown place: the vault combination is 27-18-28"
    await say(unknown, alice, secret)
    await say(general, alice, "kiwi in general")
    assert [text for _, text, _ in await rows(bot)] == [secret, "kiwi in general"]
    seen = await seen_from(bot, general, "vault combination")
    assert "kiwi" in seen and "27-18-28" not in seen


async def test_what_is_said_to_the_bot_is_stored_as_addressed_to_it(bot):
    """By mention, by its name or in reply to it: kept for the channel and for deletion, marked as the bot's
    conversation (never evidence of what was said); people talking among themselves, naming the bot mid-sentence,
    is speech."""
    general = place("general")
    alice, bob = dpytest.get_config().members
    await say(general, alice, f"<@{bot.user.id}> what did I say about my new pet?")
    answer = dpytest.get_message()
    await say(general, bob, f"{bot.settings.bot_name}, what did alice adopt?")
    dpytest.get_message()
    reply = {"type": 0, "message_id": str(answer.id), "channel_id": str(general.id), "guild_id": str(general.guild.id)}
    await say(general, alice, "and what is her name?", reference=reply)
    dpytest.get_message()
    await say(general, bob, f"I bet {bot.settings.bot_name} remembers the kitten")
    kinds = {text: Kind(kind) for _, text, kind in await rows(bot) if kind != Kind.BOT}
    assert kinds == {
        f"<@{bot.user.id}> what did I say about my new pet?": Kind.ADDRESSED,
        f"{bot.settings.bot_name}, what did alice adopt?": Kind.ADDRESSED,
        "and what is her name?": Kind.ADDRESSED,
        f"I bet {bot.settings.bot_name} remembers the kitten": Kind.SPEECH,
    }
