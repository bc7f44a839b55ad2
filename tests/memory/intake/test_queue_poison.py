"""No poison message stops ingestion, and names are found in any case and script, on both databases.

Each hostile input rides in the middle of a burst of ordinary messages, as it would in a busy guild. Done
means: every other message of the burst is stored without a write retried, and the poison is either stored
normalised (db/records.py `normalised`) or kept in `dead_letters` — counted, never lost silently.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.memory.manager import MemoryManager
from db.models import ChatMessage, DeadLetter, MemberName
from db.records import IncomingMessage, RefusedRecordError, normalised
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message, minutes

CAROL = 2**60 + 1003  # the poison's author, unless an id of theirs is the poison

BURST = 40
POISON: dict[str, dict[str, Any]] = {
    "lone surrogate in content": {"content": "half a pair \ud800 here"},  # what json.loads makes of "\ud800"
    "lone surrogate in a name": {"author_name": "Ana \udc00", "author_username": "\udbff"},
    "NUL in content": {"content": "nul \x00 byte"},
    "NUL in display name": {"author_name": "Ana\x00Maria"},
    "NUL in username": {"author_username": "ana\x00"},
    "control characters": {"content": "bell\x07 escape\x1b[2J delete\x7f form\x0c end\ufffe"},
    "300-character username": {"author_username": "u" * 300},
    "very long display name": {"author_name": "Ω" * 5000},
    "name of only control characters": {"author_name": "\x01\x02\x03"},
    "message id 2^63": {"message_id": 2**63},
    "author id 2^63": {"author_id": 2**63},
    "channel id 2^64": {"channel_id": 2**64},
    "guild id 2^63": {"guild_id": 2**63 + 7},
    "negative author id": {"author_id": -1},
    "reply id 2^63": {"reply_to_id": 2**63},
    "mentions an id 2^63": {"mentioned_user_ids": (2**63, BOB)},
}


@pytest.fixture
async def memory(engine, settings):
    memory = MemoryManager(engine, settings)
    await memory.start()
    yield memory
    await memory.close()


async def stored_ids(memory: MemoryManager, ids: set[int]) -> set[int]:
    async with memory.sessions() as session:
        found = await session.scalars(select(ChatMessage.message_id).where(ChatMessage.message_id.in_(ids)))
        return set(found.all())


async def dead_letters(memory: MemoryManager) -> list[tuple[int | None, str, str]]:
    async with memory.sessions() as session:
        rows = await session.execute(select(DeadLetter.message_id, DeadLetter.reason, DeadLetter.payload))
        return [tuple(row) for row in rows]  # type: ignore[misc]


def burst_around(poison: IncomingMessage) -> list[IncomingMessage]:
    said = [
        message(f"ordinary message {i}", author=ALICE if i % 2 else BOB, name="alice" if i % 2 else "bob")
        for i in range(BURST)
    ]
    return [*said[: BURST // 2], poison, *said[BURST // 2 :]]


async def wait_for(memory: MemoryManager, ids: set[int], *, within: float) -> float:
    """Seconds until all of `ids` are stored (polling SQL, as another reader would), or fail after `within` (a
    hang guard)."""
    started = time.monotonic()
    while (await stored_ids(memory, ids)) != ids:
        if time.monotonic() - started > within:
            missing = len(ids - await stored_ids(memory, ids))
            pytest.fail(f"{missing} ordinary messages were not stored within {within} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


@pytest.mark.parametrize("fields", POISON.values(), ids=POISON.keys())
async def test_a_poison_message_does_not_stop_its_burst(memory, fields):
    poison = dataclasses.replace(message("the poison", author=CAROL, name="carol"), **fields)
    burst = burst_around(poison)
    ordinary = {m.message_id for m in burst if m is not poison}
    for m in burst:
        assert await memory.intake.message(m)
    await wait_for(memory, ordinary, within=30)
    # The poison was set aside at once, not retried: no write failed (a batch retried until it drops the
    # poison would store the rest seconds late; one retried for ever, never).
    assert memory.queue.stats.failed_attempts == 0
    await memory.flush()

    try:
        clean = normalised(poison)
    except RefusedRecordError:
        clean = None
    kept = await stored_ids(memory, {poison.message_id}) if 0 < poison.message_id < 2**63 else set()
    dead = await dead_letters(memory)
    async with memory.sessions() as session:
        total = await session.scalar(select(func.count()).select_from(ChatMessage))
    assert total + len(dead) == len(burst)  # nothing lost silently
    if clean is None:  # an id no database can hold: kept aside with its reason, and whole
        assert not kept and len(dead) == 1
        payload = json.loads(dead[0][2])
        assert payload["record"] == "IncomingMessage" and payload["content"] == poison.content
        assert "outside the range of a Discord ID" in dead[0][1]
        assert (await memory.admin.stats(GUILD))["dead_letters"] == (1 if poison.guild_id == GUILD else 0)
        return
    assert isinstance(clean, IncomingMessage)
    assert kept == {poison.message_id} and dead == []
    async with memory.sessions() as session:
        row = await session.get(ChatMessage, poison.message_id)
        name = await session.get(MemberName, (GUILD, poison.author_id))
    assert row is not None and row.message_text == clean.content
    assert name is not None and (name.display_name, name.username) == (clean.author_name, clean.author_username)
    for text in (row.message_text, name.display_name, name.username or ""):  # nothing a store or prompt refuses
        assert not any(c == "\x00" or "\ud800" <= c <= "\udfff" or c in "\x07\x1b\x7f\ufffe" for c in text)
    assert len(name.display_name) <= 100 and len(name.username or "") <= 100


@pytest.mark.parametrize(
    "fields",
    [{"content": "half a pair \ud800"}, {"message_id": 2**63 + 1}, {"author_id": 2**64}],
    ids=["surrogate", "message id", "author id"],
)
async def test_a_row_the_database_itself_refuses_is_bisected_out_of_its_batch(memory, fields):
    # Normalisation is the first defence; this is the second. Handed to the queue raw, the row makes the database
    # refuse the whole batch: it is halved until the row is alone, kept as a dead letter, and the rest written.
    poison = dataclasses.replace(message("raw poison"), **fields)
    burst = burst_around(poison)
    ordinary = {m.message_id for m in burst if m is not poison}
    for m in burst:
        await memory.queue.put(m)
    await wait_for(memory, ordinary, within=30)
    assert memory.queue.stats.failed_attempts == 0  # bisected at once, no attempt retried after a pause
    await memory.flush()
    dead = await dead_letters(memory)
    assert len(dead) == 1 and json.loads(dead[0][2])["content"] == poison.content
    assert memory.queue.stats.dead_letters == 1 and memory.queue.stats.written == BURST


NAMES = [
    # (stored name, how someone types it)
    ("Ömer", "ömer"),
    ("Ömer", "ÖMER"),
    ("Ömer", "Ömer"),
    ("Οδυσσέας", "ΟΔΥΣΣΈΑΣ"),  # Greek: final sigma folds like any other
    ("Οδυσσέας", "οδυσσέας"),
    ("Юлия", "юлия"),
    ("Юлия", "ЮЛИЯ"),
    ("Strauß", "STRAUSS"),
    ("İrem", "i̇rem"),  # Turkish dotted capital I folds to i + combining dot
    ("Ana\x00", "ana"),  # stored normalised, then found
]


@pytest.mark.parametrize("path", ["ingest", "note_member"])
async def test_names_resolve_in_any_case_and_script_from_what_is_stored(engine, settings, path):
    first = MemoryManager(engine, settings)
    await first.start()
    users = {}
    for i, stored in enumerate(dict.fromkeys(s for s, _ in NAMES)):
        user = 2**60 + 5000 + i
        users[stored] = user
        if path == "ingest":  # the hot path (db/messages.py) writes the name with every message
            said = IncomingMessage(GUILD, CHANNEL, 2**60 + 77_000 + i, user, stored, "hello", T0 + minutes(i))
            await first.intake.message(dataclasses.replace(said, author_username=f"user{i}"))
        else:  # a member renamed: written straight away (db/names.py)
            await first.intake.member(GUILD, user, stored, f"user{i}")
    await first.close()
    # A new process: nothing in memory, every answer comes from the stored keys.
    memory = MemoryManager(engine, settings)
    await memory.start()
    try:
        for stored, typed in NAMES:
            assert await memory.directory.resolve(GUILD, typed) == [users[stored]], (stored, typed)
            assert await memory.directory.resolve(GUILD, "@" + typed.upper()) == [users[stored]], (stored, typed)
        assert await memory.directory.resolve(GUILD, "Omer") == []  # folding is case, not accents
    finally:
        await memory.close()


async def test_dead_letters_are_counted_and_logged_once(memory, caplog):
    # A flood of unstorable records (an attack, a broken import) must not flood the log; the stats count them.
    for i in range(5):  # refused by normalisation, before the queue
        await memory.intake.message(dataclasses.replace(message("impossible author"), author_id=2**63 + i))
    await memory.queue.put(dataclasses.replace(message("raw"), message_id=2**63 + 9))  # refused by the database
    await memory.intake.message(message("fine"))
    figures = await memory.admin.stats(GUILD)
    assert (figures["messages"], figures["dead_letters"], figures["dead_letters_session"]) == (1, 6, 6)
    logged = [r for r in caplog.records if "dead letter" in r.getMessage()]
    assert len(logged) == 1, [r.getMessage() for r in logged]


IMPOSSIBLE_TIMES = {
    "year one": (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00+00:00"),
    "the calendar's last minute": (datetime(9999, 12, 31, 23, 59, tzinfo=UTC), "9999-12-31T23:59:00+00:00"),
    "before Discord": (datetime(2014, 12, 31, 23, 59, tzinfo=UTC), "2014-12-31T23:59:00+00:00"),
    "far ahead of an offset": (
        datetime(9999, 12, 31, 22, tzinfo=timezone(-timedelta(hours=1))),  # the year 10000 in UTC
        "9999-12-31T22:00:00-01:00",
    ),
}


@pytest.mark.parametrize(("at", "shown"), IMPOSSIBLE_TIMES.values(), ids=IMPOSSIBLE_TIMES.keys())
async def test_a_message_at_a_time_discord_cannot_have_is_a_dead_letter_and_its_author_can_be_forgotten(
    memory, at, shown
):
    poison = dataclasses.replace(message("carol at an impossible time", author=CAROL, name="carol"), created_at=at)
    said = message("carol at a possible time", author=CAROL, name="carol")
    burst = burst_around(poison)
    for m in [*burst, said]:
        assert await memory.intake.message(m)
    # An edit of a stored message dated where no clock is: its words kept aside too, never applied.
    await memory.intake.edit(said.message_id, "carol's impossible edit", at)
    await memory.flush()
    assert await stored_ids(memory, {poison.message_id}) == set()
    dead = await dead_letters(memory)
    assert sorted(reason.split(" is outside")[0] for _, reason, _ in dead) == [
        f"created at {shown}",
        f"edited at {shown}",
    ]
    async with memory.sessions() as session:
        assert (await session.get(ChatMessage, said.message_id)).message_text == "carol at a possible time"

    counts = await memory.admin.forget_member(GUILD, CAROL)
    assert counts["dead_letters"] == 2 and counts["chat_history"] == 1
    assert await dead_letters(memory) == []


async def test_a_message_more_than_a_day_ahead_of_now_is_a_dead_letter(memory):
    now = datetime.now(UTC)
    ahead = message("from tomorrow's tomorrow", at=now + timedelta(days=1, minutes=5))
    soon = message("a clock a little fast", at=now + timedelta(hours=23))
    for m in (ahead, soon):
        await memory.intake.message(m)
    await memory.flush()
    assert await stored_ids(memory, {ahead.message_id, soon.message_id}) == {soon.message_id}
    [(message_id, reason, _)] = await dead_letters(memory)
    assert message_id == ahead.message_id and reason.startswith(f"created at {ahead.created_at.isoformat()} is out")
