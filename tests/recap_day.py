"""A scripted day for recaps, shared by the memory, reply, Discord and console tests of them: Ana speaks in the
morning and leaves; three conversations follow (one in #events) and a secret one in a private channel; she comes
back in the evening and says hello."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.memory.manager import MemoryManager
from tests.factories import message

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)  # a Friday
MORNING = NOW.replace(hour=9)
GENERAL, EVENTS, SECRET = 2**60 + 100, 2**60 + 200, 2**60 + 300
ANA, BOB, CY, DEE = (2**60 + 1001 + i for i in range(4))
NAMES = {ANA: "Ana", BOB: "Bob", CY: "Cy", DEE: "Dee"}


async def say(memory: MemoryManager, at: datetime, who: int, text: str, channel: int = GENERAL) -> int:
    """Store one message; its id."""
    said = message(text, author=who, name=NAMES[who], channel=channel, at=at)
    await memory.intake.message(said)
    return said.message_id


async def a_day(memory: MemoryManager) -> dict[str, int]:
    """The day (SECRET must be recorded private first); the ids of the messages that matter, by name."""
    ids = {"ana": await say(memory, MORNING, ANA, "morning all, off to work, back tonight")}
    ids["before"] = await say(memory, MORNING - timedelta(minutes=30), BOB, "the pizza order from last night was cold")
    at = MORNING + timedelta(hours=1)
    ids["tournament"] = await say(memory, at, BOB, "who's in for the chess tournament on saturday? eight players")
    await say(memory, at + timedelta(minutes=2), CY, "me, and the tournament bracket should be double elimination")
    ids["decided"] = await say(memory, at + timedelta(minutes=5), BOB, "decided: the tournament starts at ten")
    at += timedelta(hours=2)
    ids["bake"] = await say(memory, at, CY, "the bake sale moved to sunday, bring cookies", EVENTS)
    await say(memory, at + timedelta(minutes=3), DEE, "I'll bake lemon cookies for the sale", EVENTS)
    at += timedelta(hours=2)
    ids["migration"] = await say(memory, at, DEE, "heads up: the server migration is tonight, expect downtime")
    await say(memory, at + timedelta(minutes=4), BOB, "how long is the migration downtime?")
    ids["secret"] = await say(memory, at + timedelta(minutes=6), DEE, "the surprise party for Ana is a secret", SECRET)
    await say(memory, NOW - timedelta(minutes=2), ANA, "hi all, I'm back")  # arrival, not presence …
    await say(memory, NOW - timedelta(minutes=1), BOB, "welcome back Ana")  # … even when others answer it
    await memory.flush()
    return ids


def link(guild: int, channel: int, message_id: int) -> str:
    """The jump link a recap gives for a message."""
    return f"https://discord.com/channels/{guild}/{channel}/{message_id}"
