"""Spans the listener, the responder's recall and bot/faults.py on purpose (the bot and the outage are
tests/test_faults_outage.py's): a database outage while members ask questions whose replies recall what was said
is still a handful of lines, with no task exception left for asyncio to report.

Issue 37 found a "Task exception was never retrieved" with ~145 lines of traceback per reply that recalled during a
60 s outage (~3,200 lines a process): recall ran as a task beside the context build, and when the build met the
outage first nobody read what the recall met. The outage here lasts OUTAGE_SECONDS, not 60: each reply met it
alike (what it does not show is the "still down" reminder a minute brings, which tests/test_faults.py covers).
"""

from __future__ import annotations

import asyncio
import gc
import logging

import discord.ext.test as dpytest

from bot.reply.deadline import AWAY
from tests import test_faults_outage
from tests.discord.test_listener_deadline import next_message
from tests.private_postgres import PrivateServer
from tests.test_faults_outage import HANDFUL, NOISY, outage
from tests.unretrieved import NEVER_RETRIEVED

bot = test_faults_outage.bot  # the fixture: the bot on dpytest and a private PostgreSQL server

OUTAGE_SECONDS = 5.0
QUESTION = "what did bob say about the rain in Porto?"


async def test_replies_that_recall_during_an_outage_are_a_handful_of_lines(
    bot, private_postgres: PrivateServer, caplog
):
    alice, bob = dpytest.get_config().members
    for i in range(20):
        await dpytest.message(f"day {i}: the rain in Porto came back, the river rose", member=bob)
    await bot.memory.flush()
    await dpytest.message(f"<@{bot.user.id}> {QUESTION}", member=alice)
    before = (await next_message()).content
    assert "rain in Porto" in before  # recall found it while storage was there: these replies recall

    caplog.clear()
    for noisy in NOISY:  # as bot/logging_setup.py runs the bot
        caplog.set_level(logging.WARNING, logger=noisy)
    caplog.set_level(logging.INFO)
    down = asyncio.create_task(outage(private_postgres, OUTAGE_SECONDS))
    replies = []
    while not down.done():
        await dpytest.message(f"<@{bot.user.id}> {QUESTION}", member=alice)
        replies.append((await next_message()).content)
        await dpytest.message("and the wind too", member=bob)
        await asyncio.sleep(0.3)
    await asyncio.wait_for(bot.memory.flush(), timeout=60)  # a hang guard: the queue's backoff is at most 5 s
    for _ in range(600):  # every source that held storage down has worked again (a hang guard of 30 s)
        if not bot.memory.storage.down:
            break
        await asyncio.sleep(0.05)
    gc.collect()  # a task nobody awaited is reported when it is collected

    lines = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.INFO]
    print("\n".join(lines))
    assert not any(line.split(": ", 1)[-1].startswith(NEVER_RETRIEVED) for line in lines), lines
    assert len(lines) <= HANDFUL, lines
    assert sum("storage down" in line for line in lines) == 1, lines
    assert sum(r.exc_info is not None for r in caplog.records) <= 2  # one per new kind of cause
    assert [reply for reply in replies if reply.startswith(AWAY)], replies  # replies met the outage
