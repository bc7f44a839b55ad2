"""Discord tests: dpytest keeps members only with the members intent (a message mentioning the bot crashes
without it, as the field notes say), so the bots built here ask for it. The shipped default leaves it off."""

from __future__ import annotations

import pytest

from tests.discord.gateway import real_snowflakes


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"discord_members_intent": True})


@pytest.fixture(autouse=True)
def discord_ids():
    real_snowflakes()
