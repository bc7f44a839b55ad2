"""DiscordChatExporter import on both databases: idempotent, names recorded, bad files rejected whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from bot.exports import ImportFileError, read_export
from bot.importer import describe, import_file
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from db.deletion import FORMER
from db.models import ChatMessage, MemberName
from tests.export_files import AUTHORS, CHANNEL_ID, GUILD_ID, write_export
from tests.residue import forgotten_in_clear


@pytest.fixture
async def memory(engine, settings):
    memory = MemoryManager(engine, settings)
    await memory.start()
    yield memory
    await memory.close()


async def count(memory: MemoryManager) -> int:
    async with memory.sessions() as session:
        return await session.scalar(select(func.count()).select_from(ChatMessage)) or 0


async def test_import_is_idempotent_and_keeps_names_edits_and_replies(memory, tmp_path):
    path = write_export(tmp_path / "general.json", 50)
    result = await import_file(memory, path, include_bots=False, progress=False)
    assert (result.messages, result.skipped_bots, result.channel, result.guild) == (45, 5, "general", "Test Guild")
    assert (result.stored, result.duplicates, result.guild_id) == (45, 0, GUILD_ID)
    assert await count(memory) == 45
    again = await import_file(memory, path, include_bots=False, progress=False)
    assert (again.messages, again.stored, again.duplicates) == (45, 0, 45) and await count(memory) == 45
    async with memory.sessions() as session:
        names = dict((await session.execute(select(MemberName.user_id, MemberName.display_name))).all())
        edited = await session.get(ChatMessage, 2**60 + 1_000_000 + 3)
        reply = await session.get(ChatMessage, 2**60 + 1_000_000 + 4)
    assert names == {AUTHORS[0][0]: "Ana", AUTHORS[1][0]: "bob"}
    assert edited is not None and edited.edited_at is not None
    assert reply is not None and reply.reply_to_id == 2**60 + 1_000_000 + 3
    assert edited.guild_id == GUILD_ID and edited.channel_id == CHANNEL_ID


async def test_bots_are_imported_when_the_setting_says_so(memory, tmp_path):
    path = write_export(tmp_path / "general.json", 20)
    assert (await import_file(memory, path, include_bots=True, progress=False)).messages == 20


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "is not a JSON export"),
        (json.dumps({"guild": {"id": "1"}, "messages": []}), "channel"),
        (
            json.dumps(
                {
                    "guild": {"id": "1"},
                    "channel": {"id": "2"},
                    "messages": [{"id": "x", "timestamp": "2025-01-01T00:00:00+00:00", "author": {}}],
                }
            ),
            "messages.0.id",
        ),
    ],
)
def test_a_bad_file_gets_one_clear_error_naming_it(tmp_path, content, problem):
    path = tmp_path / "broken.json"
    path.write_text(content)
    with pytest.raises(ImportFileError) as err:
        read_export(path)
    assert str(err.value).startswith(f"{path}: ") and problem in str(err.value)


async def test_a_file_bad_at_the_end_stores_nothing(memory, tmp_path):
    path = write_export(tmp_path / "general.json", 30)
    data = json.loads(path.read_text())
    data["messages"][-1]["timestamp"] = "yesterday"
    path.write_text(json.dumps(data))
    with pytest.raises(ImportFileError, match="timestamp"):
        await import_file(memory, path, include_bots=False, progress=False)
    assert await count(memory) == 0


async def test_an_export_saved_with_a_utf8_bom_is_imported(memory, tmp_path):
    path = write_export(tmp_path / "general.json", 20)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # as Windows tools save "UTF-8"
    assert (await import_file(memory, path, include_bots=False, progress=False)).messages == 18
    assert await count(memory) == 18


async def test_messages_of_a_member_who_opted_out_are_skipped_and_counted(memory, tmp_path):
    await memory.admin.opt_out(GUILD_ID, AUTHORS[1][0], delete_stored=False)
    path = write_export(tmp_path / "general.json", 50)
    result = await import_file(memory, path, include_bots=False, progress=False)
    # bob wrote 20 of the 45 messages of people (odd ones; every 10th is a bot's): none is kept
    assert (result.stored, result.opted_out, result.skipped) == (25, 20, 25)
    assert await count(memory) == 25


EXPORT_START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)  # write_export's first message; one a minute after it


@pytest.fixture
async def at_export_time(engine, settings):
    """Memory whose clock stands at the export's first message, moved by the test (and its settings, if given)."""
    made: list[MemoryManager] = []

    async def make(**changes: object) -> MemoryManager:
        memory = MemoryManager(engine, settings.model_copy(update=changes), clock=FakeClock(EXPORT_START))
        await memory.start()
        made.append(memory)
        return memory

    yield make
    for memory in made:
        await memory.close()


async def test_what_a_member_said_while_opted_out_is_not_imported_after_they_opt_back_in(at_export_time, tmp_path):
    memory = await at_export_time()
    memory.clock.advance(minutes=10)
    await memory.admin.opt_out(GUILD_ID, AUTHORS[1][0], delete_stored=False)
    memory.clock.advance(minutes=20)
    await memory.admin.opt_in(GUILD_ID, AUTHORS[1][0])
    result = await import_file(memory, write_export(tmp_path / "general.json", 50), include_bots=False, progress=False)
    # bob's messages 11 … 27 (odd, but not 19: a bot's) were said while he was opted out
    assert (result.stored, result.opted_out) == (37, 8)


async def test_a_forgotten_members_mentions_in_others_messages_are_not_imported(at_export_time, tmp_path):
    memory = await at_export_time()
    memory.clock.advance(days=1)
    bob = AUTHORS[1][0]
    await memory.admin.forget_member(GUILD_ID, bob)
    result = await import_file(memory, write_export(tmp_path / "general.json", 50), include_bots=False, progress=False)
    assert (result.stored, result.opted_out) == (25, 20)  # Ana's, of which every other one mentions bob
    async with memory.sessions() as session:
        texts = list(await session.scalars(select(ChatMessage.message_text)))
    assert sum(FORMER in t for t in texts) == 13
    assert await forgotten_in_clear(memory.engine, bob, said_until=memory.clock.now()) == []


async def test_an_import_older_than_retention_keeps_is_skipped_and_counted(at_export_time, tmp_path):
    memory = await at_export_time(retention_days=1)
    memory.clock.advance(days=1, minutes=25)  # retention keeps the export's messages 25 … 49
    result = await import_file(memory, write_export(tmp_path / "general.json", 50), include_bots=False, progress=False)
    assert (result.stored, result.expired, result.skipped) == (22, 23, 28)  # 2 + 3 of the skipped are bots'
    assert await count(memory) == 22
    assert "23 older than RETENTION_DAYS keeps" in describe(result)
