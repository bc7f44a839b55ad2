"""Catch-up through dpytest's gateway (both databases) as a job that finishes: a channel whose history fails goes on
from the last message it read, deletions made while the bot was away are followed within the verified span
(CATCHUP_VERIFY_HOURS) and not before it, and what that span costs in history requests, counted.

The bot, "Discord" (dpytest's channel log with an API-true `logs_from`) and the helpers are tests/discord/
test_catchup.py's.
"""

from __future__ import annotations

from datetime import timedelta

import aiohttp
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from tests.discord import test_catchup
from tests.discord.test_catchup import catch_up, said_while_away, stored

bot = test_catchup.bot  # the fixture: a bot on dpytest whose history follows Discord's API


def requests_of(channel_id: int, *, fail_at: int | None = None) -> list[int | None]:
    """The `after` of each history request for the channel, recorded as they come; request number `fail_at` (0:
    the first) fails once, as a dropped connection does."""
    serve = backend.FakeHttp.logs_from
    asked: list[int | None] = []

    async def logs_from(self, channel, limit, before=None, after=None, around=None):
        if channel == channel_id:
            asked.append(after)
            if len(asked) - 1 == fail_at:
                raise aiohttp.ServerDisconnectedError()
        return await serve(self, channel, limit, before=before, after=after, around=around)

    backend.FakeHttp.logs_from = logs_from  # the bot fixture's monkeypatch restores dpytest's own afterwards
    return asked


def deleted_in_discord(channel, message_id: int) -> None:
    log = backend._cur_config.messages[channel.id]
    log[:] = [m for m in log if int(m["id"]) != message_id]


async def test_a_history_that_fails_midway_goes_on_from_the_last_message_read(bot, engine):
    config = dpytest.get_config()
    general, alice = config.channels[0], config.members[0]
    said = [said_while_away(general, alice, f"line {i}", ago=timedelta(minutes=30, seconds=-i)) for i in range(250)]
    asked = requests_of(general.id, fail_at=1)  # the second page: a connection dropped after the first
    await catch_up(bot)
    assert set(await stored(engine)) == set(said)
    # The try after the failure asks for what follows the first page, not the channel from its start again.
    assert asked[1:] == [said[99], said[99], said[199]]


async def test_deletions_made_while_away_are_followed_within_the_verified_span_only(bot, engine):
    config = dpytest.get_config()
    general, alice = config.channels[0], config.members[0]
    assert bot.settings.catchup_verify_hours == 6
    outside = said_while_away(general, alice, "seven hours before the newest", ago=timedelta(hours=7))
    inside = said_while_away(general, alice, "five hours before the newest", ago=timedelta(hours=5))
    newest = said_while_away(general, alice, "the newest", ago=timedelta(minutes=1))
    await catch_up(bot)
    deleted_in_discord(general, outside)
    deleted_in_discord(general, inside)  # an hour of overlap (before issue 37) never saw this one go
    await catch_up(bot)
    assert set(await stored(engine)) == {outside, newest}


@pytest.mark.parametrize("in_span", [0, 99, 100, 250])
async def test_what_the_verified_span_costs_is_one_request_per_100_messages(bot, engine, in_span):
    config = dpytest.get_config()
    general, alice = config.channels[0], config.members[0]
    span = timedelta(hours=bot.settings.catchup_verify_hours)
    said_while_away(general, alice, "before the span", ago=span + timedelta(hours=2))
    for i in range(in_span):  # the 6 hours before the newest, spread out
        said_while_away(general, alice, f"line {i}", ago=span * (in_span - i) / (in_span + 1) + timedelta(minutes=1))
    newest = said_while_away(general, alice, "the newest stored", ago=timedelta(minutes=1))
    await catch_up(bot)  # everything is stored: the next catch-up reads the verified span again
    assert newest in await stored(engine)
    asked = requests_of(general.id)
    await catch_up(bot)
    assert len(asked) == (in_span + 1) // 100 + 1  # pages of 100 (the newest counts), and the short last one
