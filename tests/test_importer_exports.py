"""Importing exports as DiscordChatExporter really writes them (fakes/exporter_json.py), on both databases.

A new user's first step is importing what their server said; these exports carry everything the real tool
puts in a file: threads whose `categoryId` is their parent channel, DMs with guild "0", every system notice
with its fallback text, files, stickers, forwards, local time offsets and partitions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select

from bot.exports import ImportFileError
from bot.importer import import_file
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage, Kind
from db.models import Base, ChannelPrivacy, ChatMessage, DeadLetter, MemberName
from fakes import exporter_json as dce
from fakes.exporter_json import File, Guild, JsonWriter, Msg, Reference, Snapshot, Sticker, User
from fakes.models import model_stack

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 11, 20, 20, 0, tzinfo=UTC)
YESTERDAY = NOW - timedelta(days=1, hours=6)
TODAY = NOW - timedelta(hours=6)
# The exporting machine was in India: every date in the files carries +05:30 (DiscordChatExporter without --utc).
KOLKATA = ZoneInfo("Asia/Kolkata")

GUILD = Guild(2**60 + 7000, "Trail Runners")
TEXT_CATEGORY = dce.Channel(2**60 + 7001, dce.CATEGORY, "Text Channels")
GENERAL = dce.Channel(2**60 + 7002, dce.TEXT, "general", parent=TEXT_CATEGORY, topic="Say hi")
VAULT = dce.Channel(2**60 + 7003, dce.PRIVATE_THREAD, "vault-talk", parent=GENERAL)
TRIP = dce.Channel(2**60 + 7004, dce.PUBLIC_THREAD, "trip planning", parent=GENERAL)
STAFF = dce.Channel(2**60 + 7005, dce.TEXT, "staff", parent=TEXT_CATEGORY)
STAFF_THREAD = dce.Channel(2**60 + 7006, dce.PUBLIC_THREAD, "rota", parent=STAFF)

ANA = User(2**60 + 8001, "ana.silva", "Ana")
BOB = User(2**60 + 8002, "bobby", None, discriminator=4821)  # an old-style username#discriminator
CAROL = User(2**60 + 8003, "carol", "Carol")
HELPER = User(2**60 + 8009, "helperbot", "Helper", is_bot=True)
ELEFANT = User(2**60 + 8010, "Elefant", None, is_bot=True)  # the bot itself, as an export shows it

SECRET = "the vault combination is 31-41-59"
_ids = iter(range(2**60 + 9_000_000, 2**60 + 10_000_000))


def msg(author: User, content: str = "", *, at: datetime = TODAY, **fields: object) -> Msg:
    """A message with the next snowflake-sized id (ids grow with time, as Discord's do)."""
    return Msg(next(_ids), author, at, content, **fields)  # type: ignore[arg-type]


def writer(channel: dce.Channel, **options: object) -> JsonWriter:
    return JsonWriter(GUILD, channel, zone=KOLKATA, **options)  # type: ignore[arg-type]


@pytest.fixture
async def memory(engine, settings):
    # The offline model quotes what was said, so a leaked word shows in summaries and contexts as it is.
    settings = settings.model_copy(update={"memory_wait_seconds": 600})
    memory = MemoryManager(engine, settings, llm=model_stack(), clock=FakeClock(NOW))
    await memory.start()
    yield memory
    await memory.close()


async def rows(memory: MemoryManager, model: type[Base] = ChatMessage) -> int:
    async with memory.sessions() as session:
        return await session.scalar(select(func.count()).select_from(model)) or 0


async def texts(memory: MemoryManager) -> list[str]:
    async with memory.sessions() as session:
        return list((await session.scalars(select(ChatMessage.message_text).order_by(ChatMessage.message_id))).all())


async def everything_said_about(memory: MemoryManager, channel: int, query: str) -> str:
    """What a reader in `channel` can get about the guild: recall, every member's context, summaries, exports."""
    assert memory.summaries is not None
    seen = [hit.text for hit in await memory.recollection.recall(GUILD.id, query, channel_id=channel, limit=50)]
    for user in (ANA, BOB, CAROL):
        seen.append(await memory.recollection.context(GUILD.id, user.id) or "")
        seen.append(await memory.admin.export(GUILD.id, user.id))
    seen += (await memory.summaries.today(GUILD.id, NOW)).values()
    seen += (await memory.summaries.past_day(GUILD.id, YESTERDAY.date())).values()
    return "\n".join(seen)


async def test_a_private_thread_secret_never_reaches_its_public_parent(memory, tmp_path):
    [general] = writer(GENERAL).write(
        tmp_path / "general.json",
        [
            msg(ANA, "kiwi smoothies after the long run", at=YESTERDAY),
            msg(BOB, "kiwi for me too", at=YESTERDAY + timedelta(minutes=3)),
            msg(ANA, "anyone up for the vault hill repeats?"),
        ],
    )
    vault_messages = [
        msg(ANA, "", type=dce.RECIPIENT_ADD, mentions=[BOB], at=YESTERDAY + timedelta(minutes=10)),
        msg(ANA, SECRET, at=YESTERDAY + timedelta(minutes=11)),
        msg(BOB, f"got it, {SECRET.split(' is ')[1]} for the vault", at=TODAY + timedelta(minutes=1)),
    ]
    [vault] = writer(VAULT).write(tmp_path / "vault-talk.json", vault_messages)
    exported = json.loads(vault.read_text(encoding="utf-8"))["channel"]
    assert (exported["type"], exported["categoryId"]) == ("GuildPrivateThread", str(GENERAL.id))

    assert (await import_file(memory, general, include_bots=False, progress=False)).messages == 3
    result = await import_file(memory, vault, include_bots=False, progress=False)
    assert (result.messages, result.skipped_notices, result.private) == (2, 1, True)

    public = await everything_said_about(memory, GENERAL.id, "vault combination")
    assert "kiwi" in public  # the reader does see the public channel: the checks below can fail
    assert "31-41-59" not in public and "combination" not in public
    # Inside the thread itself the secret is there to find: it was stored, just not shared.
    inside = await memory.recollection.recall(GUILD.id, "vault combination", channel_id=VAULT.id)
    assert any("31-41-59" in hit.text for hit in inside)


async def test_a_public_thread_follows_its_parent_channel(memory, tmp_path):
    # #staff is not readable by @everyone (the export cannot say so: --private), its public thread inherits that.
    [staff] = writer(STAFF).write(tmp_path / "staff.json", [msg(CAROL, "staff pay rises are frozen")])
    [rota] = writer(STAFF_THREAD).write(tmp_path / "rota.json", [msg(CAROL, "rota: carol covers the saturday gate")])
    [trip] = writer(TRIP).write(tmp_path / "trip.json", [msg(ANA, "trip: the saturday bus leaves at seven")])
    [general] = writer(GENERAL).write(tmp_path / "general.json", [msg(BOB, "see you on saturday")])
    await import_file(memory, staff, include_bots=False, progress=False, private=True)
    rota_result = await import_file(memory, rota, include_bots=False, progress=False)
    assert not rota_result.private  # the thread itself is public; its parent decides
    await import_file(memory, trip, include_bots=False, progress=False)
    await import_file(memory, general, include_bots=False, progress=False)

    seen = await everything_said_about(memory, GENERAL.id, "saturday")
    assert "bus leaves at seven" in seen  # a public thread of a public channel is shared
    assert "rota" not in seen and "pay rises" not in seen


@pytest.mark.parametrize(
    ("kind", "category"),
    [(dce.DM, None), (dce.GROUP_DM, None), (dce.DM, ("0", "Private"))],
    ids=["DirectTextChat", "DirectGroupTextChat", "older-exporter-DM"],
)
async def test_a_direct_message_export_is_refused_in_one_sentence_and_stores_nothing(memory, tmp_path, kind, category):
    channel = dce.Channel(2**60 + 7100, kind, "ana, bob")
    path = tmp_path / "dm.json"
    JsonWriter(Guild(dce.DIRECT_MESSAGES, "Direct Messages"), channel, zone=KOLKATA).write(
        path, [msg(ANA, "my new phone pin is 0000"), msg(BOB, "ok", type=dce.REPLY)]
    )
    if category is not None:  # DiscordChatExporter 2.3x wrote "categoryId": "0", "category": "Private" for DMs
        data = json.loads(path.read_text(encoding="utf-8"))
        data["channel"]["categoryId"], data["channel"]["category"] = category
        path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ImportFileError) as refused:
        await import_file(memory, path, include_bots=False, progress=False)
    sentence = str(refused.value)
    assert sentence.startswith(f"{path}: is an export of direct messages")
    assert "\n" not in sentence and sentence.count(". ") == 0  # one sentence
    await memory.flush()
    assert [await rows(memory, m) for m in (ChatMessage, DeadLetter, MemberName, ChannelPrivacy)] == [0] * 4


NOTICES = [
    # (Discord type, raw API content, extra fields): each as the exporter writes it, by a person, not a bot.
    (dce.JOIN, "", {}),
    (dce.PIN, "", {"reference": Reference(2**60 + 9_999_001, GENERAL.id, GUILD.id)}),
    (dce.THREAD_CREATED, "trip planning", {"reference": Reference(None, TRIP.id, GUILD.id)}),
    (dce.CALL, "", {"call_ended": TODAY + timedelta(minutes=113)}),
    (dce.NAME_CHANGE, "general-chat", {}),
    (dce.ICON_CHANGE, "", {}),
    (dce.RECIPIENT_ADD, "", {"mentions": [BOB]}),
    (dce.RECIPIENT_REMOVE, "", {"mentions": [CAROL]}),
    (dce.BOOST, "3", {}),  # "3 boosts": a system notice that prints as a bare number and raw content
    (dce.BOOST_TIER_1, "", {}),
    (dce.THREAD_STARTER, "", {"reference": Reference(2**60 + 9_999_002, GENERAL.id, GUILD.id)}),
]


async def test_system_notices_are_never_anyones_words(memory, tmp_path):
    said = [msg(ANA, "first real words"), msg(BOB, "second real words")]
    notices = [msg(CAROL, content, type=kind, **extra) for kind, content, extra in NOTICES]  # type: ignore[arg-type]
    [path] = writer(GENERAL).write(tmp_path / "general.json", [said[0], *notices, said[1]])
    written = json.loads(path.read_text(encoding="utf-8"))["messages"]
    fallbacks = [m["content"] for m in written[1:-1]]
    assert [m["type"] for m in written[1:-1]] == [
        "GuildMemberJoin",
        "ChannelPinnedMessage",
        "ThreadCreated",
        "Call",
        "ChannelNameChange",
        "ChannelIconChange",
        "RecipientAdd",
        "RecipientRemove",
        "8",
        "9",
        "21",
    ]
    assert fallbacks == [
        "Joined the server.",
        "Pinned a message.",
        "Started a thread.",
        "Started a call that lasted 113 minutes.",
        "Changed the channel name: general-chat",
        "Changed the channel icon.",
        "Added bobby to the group.",
        "Left the group.",  # she removed herself
        "3",
        "",
        "",
    ]

    result = await import_file(memory, path, include_bots=False, progress=False)
    assert (result.messages, result.skipped_notices) == (2, len(NOTICES))
    assert await texts(memory) == ["first real words", "second real words"]
    assert memory.summaries is not None
    today = await memory.summaries.today(GUILD.id, NOW)
    assert set(today) == {ANA.id, BOB.id}  # carol only joined, pinned, called …: she said nothing
    for text in [*today.values(), await memory.recollection.context(GUILD.id, CAROL.id) or ""]:
        assert not any(fallback and fallback in text for fallback in fallbacks)
    assert await memory.directory.resolve(GUILD.id, "carol") == []  # nor is she known by a name from a notice


async def test_files_stickers_and_forwards_keep_their_words(memory, tmp_path):
    plan, map_png = File(2**60 + 501, "plan.pdf"), File(2**60 + 502, "route map.png")
    messages = [
        msg(ANA, "", files=[plan]),
        msg(BOB, "", stickers=[Sticker(2**60 + 601, "Wave")]),
        msg(
            CAROL,
            "",
            reference=Reference(2**60 + 9_999_003, 2**60 + 42, 2**60 + 43, forward=True),
            forwarded=Snapshot(TODAY - timedelta(days=3), "meet at the north gate at 6", files=[map_png]),
        ),
        msg(ANA, "here is the gpx", files=[File(2**60 + 503, "loop.gpx")], stickers=[Sticker(2**60 + 602, "Run")]),
        msg(  # a forwarded sticker: the sticker is all the forward says
            BOB,
            "",
            reference=Reference(2**60 + 9_999_004, 2**60 + 42, 2**60 + 43, forward=True),
            forwarded=Snapshot(TODAY - timedelta(days=1), "", stickers=[Sticker(2**60 + 603, "Thumbs Up")]),
        ),
        msg(BOB, ""),  # nothing to say (a poll or an embed-only post, which the export leaves empty): not stored
    ]
    [path] = writer(GENERAL).write(tmp_path / "general.json", messages)
    result = await import_file(memory, path, include_bots=False, progress=False)
    assert result.messages == 5
    assert await texts(memory) == [
        "[attachment: plan.pdf]",
        "[sticker: Wave]",
        "[forwarded message] meet at the north gate at 6 [attachment: route map.png]",
        "here is the gpx\n[attachment: loop.gpx]\n[sticker: Run]",
        "[forwarded message] [sticker: Thumbs Up]",
    ]
    async with memory.sessions() as session:
        forward = await session.get(ChatMessage, messages[2].id)
    assert forward is not None and forward.reply_to_id is None  # a forward is not a reply to that message
    hits = await memory.recollection.recall(GUILD.id, "north gate", channel_id=GENERAL.id)
    assert [hit.user_id for hit in hits] == [CAROL.id]


async def test_local_offsets_are_the_same_instants_and_replies_slash_commands_are_bots(memory, tmp_path):
    asked = msg(ANA, "what time is it in Lisbon?", at=datetime(2026, 11, 19, 23, 45, 30, 123_000, tzinfo=UTC))
    reply = msg(
        BOB,
        "just past midnight",
        at=asked.at + timedelta(minutes=20),
        type=dce.REPLY,
        edited=asked.at + timedelta(minutes=25),
        reference=Reference(asked.id, GENERAL.id, GUILD.id),
    )
    slash = msg(
        HELPER,
        "Pong! 42 ms",
        type=dce.SLASH_REPLY,
        interaction=dce.Interaction(2**60 + 777, "ping", ANA),
        at=asked.at + timedelta(minutes=30),
    )
    [path] = writer(GENERAL).write(tmp_path / "general.json", [asked, reply, slash])
    written = json.loads(path.read_text(encoding="utf-8"))["messages"]
    assert written[0]["timestamp"] == "2026-11-20T05:15:30.123+05:30"  # the next local day, half-hour offset
    assert written[2]["type"] == "20" and written[2]["interaction"]["name"] == "ping"

    result = await import_file(memory, path, include_bots=False, progress=False)
    assert (result.messages, result.skipped_bots) == (2, 1)
    async with memory.sessions() as session:
        first = await session.get(ChatMessage, asked.id)
        second = await session.get(ChatMessage, reply.id)
    assert first is not None and first.timestamp == asked.at
    assert second is not None and (second.timestamp, second.edited_at) == (reply.at, reply.edited)
    assert second.reply_to_id == asked.id
    with_bots = await import_file(memory, path, include_bots=True, progress=False)
    assert with_bots.messages == 3  # an app's reply to a slash command is a message when bots are wanted


async def test_what_members_said_to_the_bot_is_imported_as_addressed_to_it(memory, tmp_path):
    """By a mention of the bot's id, in reply to one of its messages, or by its name, as the listener reads them:
    the conversation with the bot is no evidence of what was said. The bot's own messages are not imported, even
    with bots wanted: the bot stores its replies itself, with their sources."""
    kitten = msg(ANA, "I adopted a kitten named Pixel", at=YESTERDAY)
    mention = msg(ANA, f"<@{ELEFANT.id}> what did I say about my new pet?", mentions=[ELEFANT])
    answer = msg(ELEFANT, "Here is what I found", type=dce.REPLY, reference=Reference(mention.id, GENERAL.id, GUILD.id))
    reply = msg(BOB, "and what is her name?", type=dce.REPLY, reference=Reference(answer.id, GENERAL.id, GUILD.id))
    named = msg(CAROL, "Elefant, what did Ana adopt?")
    about = msg(BOB, "I bet Elefant remembers the kitten")
    ping = msg(HELPER, "Pong! 42 ms")
    [path] = writer(GENERAL).write(tmp_path / "general.json", [kitten, mention, answer, reply, named, about, ping])
    assert (await import_file(memory, path, include_bots=False, progress=False)).skipped_bots == 2
    assert (await import_file(memory, path, include_bots=True, progress=False)).skipped_bots == 1
    async with memory.sessions() as session:
        stored = dict((await session.execute(select(ChatMessage.message_id, ChatMessage.kind))).all())
    assert stored == {
        kitten.id: Kind.SPEECH,
        mention.id: Kind.ADDRESSED,
        reply.id: Kind.ADDRESSED,
        named.id: Kind.ADDRESSED,
        about.id: Kind.SPEECH,
        ping.id: Kind.SPEECH,  # another bot, imported as its words when bots are wanted
    }


async def test_partitioned_export_imports_whole_and_once(memory, tmp_path):
    said = [msg(ANA if i % 2 else BOB, f"lap {i} done", at=TODAY + timedelta(seconds=i)) for i in range(250)]
    paths = writer(GENERAL).write(tmp_path / "Trail Runners - general [123].json", said, partition=100)
    assert [p.name for p in paths] == [
        "Trail Runners - general [123].json",
        "Trail Runners - general [123] [part 2].json",
        "Trail Runners - general [123] [part 3].json",
    ]
    assert [json.loads(p.read_text(encoding="utf-8"))["messageCount"] for p in paths] == [100, 100, 50]
    for _ in range(2):  # a second import of the same files adds nothing
        imported = [await import_file(memory, p, include_bots=False, progress=False) for p in paths]
        assert [r.messages for r in imported] == [100, 100, 50]
        assert await rows(memory) == 250


def run_cli(args: list[str], db_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "LOG_LEVEL"}}
    env.update(DATABASE_URL=db_url, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=180,
        check=False,
    )


async def test_the_real_command_line_imports_threads_and_skips_a_dm(db_url, memory, tmp_path):
    [general] = writer(GENERAL).write(
        tmp_path / "general.json",
        [msg(CAROL, "", type=dce.JOIN), msg(ANA, "kiwi smoothies for everyone"), msg(BOB, "kiwi yes")],
    )
    [vault] = writer(VAULT).write(tmp_path / "vault-talk.json", [msg(ANA, SECRET)])
    dm = tmp_path / "dm.json"
    JsonWriter(Guild(0, "Direct Messages"), dce.Channel(2**60 + 7100, dce.DM, "bob"), zone=KOLKATA).write(
        dm, [msg(ANA, "dm secret 0000")]
    )
    result = run_cli(["import", str(general), str(vault), str(dm)], db_url, tmp_path)
    assert result.returncode == 0, result.stderr  # a DM export is not kept, by design: no failure
    assert result.stdout.splitlines() == [
        f"{general}: #general (Trail Runners): 2 stored, 0 duplicates, 1 skipped (1 system notice)",
        f"{vault}: #vault-talk (Trail Runners): 1 stored, 0 duplicates, 0 skipped",
        f"Guild {GUILD.id} (Trail Runners): 3 messages stored, 0 duplicates, 1 skipped, from 2 files.",
        f"Next: python -m bot stats --guild {GUILD.id}",
    ]
    # Its one line, and no log lines (at INFO they came between the result lines on a terminal).
    assert result.stderr.splitlines() == [
        f"Skipped: {dm}: is an export of direct messages (Elefant keeps only what is said in servers)"
    ]
    only_dm = run_cli(["import", str(dm)], db_url, tmp_path)
    assert only_dm.returncode == 1  # nothing could be imported
    assert only_dm.stderr.splitlines()[-1] == "Nothing was imported."
    # What the command line stored, read by this process: the thread stays private, the DM is nowhere.
    assert await texts(memory) == ["kiwi smoothies for everyone", "kiwi yes", SECRET]
    public = await everything_said_about(memory, GENERAL.id, "vault combination")
    assert "kiwi" in public and "31-41-59" not in public


async def test_an_import_without_private_does_not_make_a_known_private_channel_public(memory, tmp_path):
    # The live bot saw #staff hidden from @everyone; later an admin imports its history and forgets --private.
    # The file cannot say whether the channel is private, so it must not overrule what is known.
    await memory.intake.channel(GUILD.id, STAFF.id, is_private=True)
    await memory.intake.message(
        IncomingMessage(GUILD.id, STAFF.id, next(_ids), CAROL.id, "Carol", "staff pay rises are frozen", TODAY)
    )
    [staff] = writer(STAFF).write(tmp_path / "staff.json", [msg(CAROL, "staff bonus list is ready", at=YESTERDAY)])
    [general] = writer(GENERAL).write(tmp_path / "general.json", [msg(ANA, "kiwi run on staff day")])
    await import_file(memory, staff, include_bots=False, progress=False)
    await import_file(memory, general, include_bots=False, progress=False)
    seen = await everything_said_about(memory, GENERAL.id, "staff pay bonus")
    assert "kiwi" in seen
    assert "pay rises" not in seen and "bonus list" not in seen


async def test_hostile_fields_in_an_export_are_stored_clean_or_kept_as_dead_letters(memory, tmp_path):
    big = 2**63  # past BIGINT: no database can store it as an id
    messages = [
        msg(ANA, "before the poison"),
        msg(User(2**60 + 8100, "x" * 300, "Nick\x00name\x07"), "a long name \x00 with a NUL\x1b[31m"),
        msg(BOB, "lone \ud800 surrogate"),
        Msg(big, ANA, TODAY, "an impossible message id"),
        msg(User(big + 5, "impossible author"), "said by nobody possible"),
        msg(ANA, "mentions an impossible member", mentions=[User(big + 6, "ghost")]),
        msg(BOB, "after the poison"),
    ]
    path = tmp_path / "hostile.json"
    # json.dumps escapes the lone surrogate as "\ud800": json.loads turns it back into one, ijson's C parser (yajl)
    # into "?"; either way no database sees a lone surrogate.
    path.write_text(json.dumps(writer(GENERAL).document(messages)), encoding="utf-8")
    result = await import_file(memory, path, include_bots=False, progress=False)
    assert result.messages == len(messages)
    stored = await texts(memory)
    assert stored == [
        "before the poison",
        "a long name  with a NUL[31m",
        "lone ? surrogate",
        "mentions an impossible member",
        "after the poison",
    ]
    async with memory.sessions() as session:
        dead = (await session.execute(select(DeadLetter.message_id, DeadLetter.reason))).all()
        names = dict((await session.execute(select(MemberName.user_id, MemberName.display_name))).all())
    assert sorted(reason.split(" ")[0] for _, reason in dead) == ["author", "message"]  # none lost silently
    assert names[2**60 + 8100] == "Nickname"


async def test_deleted_accounts_keep_their_messages_but_are_no_member_called_deleted_user(memory, tmp_path):
    # As DiscordChatExporter writes them: Discord's placeholder name (lately with hex digits), discriminator 0000,
    # and each account's own id.
    gone = [User(2**60 + 8200, "Deleted User", discriminator=0), User(2**60 + 8201, "Deleted User 3fa2c9d1")]
    [path] = writer(GENERAL).write(
        tmp_path / "general.json",
        [msg(gone[0], "the old route was shorter"), msg(gone[1], "agreed"), msg(ANA, "who were they?")],
    )
    result = await import_file(memory, path, include_bots=False, progress=False)
    assert (result.stored, await texts(memory)) == (3, ["the old route was shorter", "agreed", "who were they?"])
    async with memory.sessions() as session:
        names = (await session.execute(select(MemberName.user_id, MemberName.display_name, MemberName.username))).all()
    assert sorted(names) == [
        (ANA.id, "Ana", "ana.silva"),
        (gone[0].id, f"member {str(gone[0].id)[-4:]}", None),
        (gone[1].id, f"member {str(gone[1].id)[-4:]}", None),
    ]


@pytest.mark.parametrize(
    ("where", "value"),
    [("guild", str(2**63)), ("channel", str(2**64)), ("channel", "-5")],
)
async def test_an_impossible_guild_or_channel_id_refuses_the_file_in_one_sentence(memory, tmp_path, where, value):
    path = tmp_path / "forged.json"
    data = writer(GENERAL).document([msg(ANA, "hello")])
    data[where]["id"] = value  # type: ignore[index]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ImportFileError) as refused:
        await import_file(memory, path, include_bots=False, progress=False)
    assert str(refused.value).startswith(f"{path}: is not a DiscordChatExporter JSON export: {where}.id")
    assert [await rows(memory, m) for m in (ChatMessage, ChannelPrivacy)] == [0, 0]
