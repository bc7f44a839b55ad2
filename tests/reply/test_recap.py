"""Recaps as answers: routed from what members write (and by the model router), the threads named with links to
what matters, and — whatever the model does — an answer in time: the extract when the model is slow or failing."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path

import pytest

from bot.app import open_app, responder_for
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.reply.recap import FAILING
from bot.reply.routing import Request, Route
from bot.settings import Settings
from fakes.gemini_stub import GeminiStub, error, hang
from tests.factories import GUILD
from tests.recap_day import ANA, EVENTS, GENERAL, NOW, SECRET, a_day, link

DEADLINE = 1.0
PAST_THE_DEADLINE = 10.0  # a hang guard: a reply waiting for the model would take its 30 s time-out
_ids = count(2**60 + 70_000_000)


def asked(text: str, *, here: int = GENERAL) -> Request:
    return Request(GUILD, ANA, text, channel_id=here, message_id=next(_ids))


@pytest.fixture
async def memory(engine, settings, llm) -> AsyncIterator[MemoryManager]:
    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOW))
    await memory.start()
    await memory.intake.channel(GUILD, SECRET, is_private=True)
    yield memory
    await memory.close()


async def test_what_did_i_miss_names_the_threads_since_she_left_and_links_their_messages(memory, llm, settings):
    ids = await a_day(memory)
    responder = responder_for(memory, llm, settings)
    answer = await responder.respond(asked("Hey, what did I miss?"))
    assert answer.route is Route.RECAP
    assert answer.text.startswith("Recap of the server since you last spoke in the server (Fri 09:00)")
    for thread, channel in (("tournament", GENERAL), ("bake", EVENTS), ("migration", GENERAL)):
        assert link(GUILD, channel, ids[thread]) in answer.text, thread  # each thread's opening message
        assert ids[thread] in answer.quoted
    assert "pizza" not in answer.text and link(GUILD, GENERAL, ids["before"]) not in answer.text  # before she left
    assert "surprise" not in answer.text and ids["secret"] not in answer.quoted  # private, asked from #general
    if not llm.is_offline:
        assert "(stub model)" in answer.text  # the model's recap, its refs turned into links
    else:
        assert "Decided: the tournament starts at ten." in answer.text


async def test_a_named_channel_and_time_and_a_topic(memory, llm, settings):
    ids = await a_day(memory)
    responder = responder_for(memory, llm, settings)
    events = await responder.respond(asked(f"catch me up on <#{EVENTS}> since 10:00"))
    assert events.text.startswith(f"Recap of <#{EVENTS}> since 10:00: 2 messages, 1 thread of conversation.")
    assert link(GUILD, EVENTS, ids["bake"]) in events.text and "tournament" not in events.text
    decided = await responder.respond(asked("what did we decide about the tournament?"))
    assert decided.route is Route.RECAP and "about tournament" in decided.text
    assert link(GUILD, GENERAL, ids["tournament"]) in decided.text and "migration" not in decided.text
    nothing = await responder.respond(asked("what did we decide about the volcano?"))
    assert nothing.text == "Nothing about volcano that I can tell here was said in the server in the last 7 days."


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    # The deadline lives in the reply; one database is enough (the memory layer is tested on both).
    path = tmp_path / "elefant.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


def settings_for(db_url: str, base_url: str, **overrides: object) -> Settings:
    values = {
        "database_url": db_url,
        "gemini_api_key": "test-key",
        "gemini_base_url": base_url,
        "discord_token": None,
        "embedding_model": "none",
        "reply_deadline_seconds": DEADLINE,
        **overrides,
    }
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize("fault", ["slow", "failing"])
async def test_the_extract_comes_in_time_whatever_the_model_does(sqlite_url, fault):
    stub = await GeminiStub(responder=(lambda _: hang()) if fault == "slow" else (lambda _: error(500))).start()
    settings = settings_for(sqlite_url, stub.base_url, llm_max_attempts=1)
    try:
        async with open_app(settings, clock=FakeClock(NOW)) as app:
            await app.memory.intake.channel(GUILD, SECRET, is_private=True)
            ids = await a_day(app.memory)
            started = time.perf_counter()
            answer = await app.responder.respond_within(asked("what did I miss?"), deadline=DEADLINE)
            assert time.perf_counter() - started < PAST_THE_DEADLINE
            await app.responder.drain(0)
    finally:
        await stub.stop()
    first = (
        "The model is slow right now, so this recap only quotes the messages that matter."
        if fault == "slow"
        else FAILING
    )
    assert answer.route is Route.RECAP and answer.text.startswith(f"{first}\nRecap of the server since")
    assert link(GUILD, GENERAL, ids["tournament"]) in answer.text and ids["tournament"] in answer.quoted
    assert "Decided: the tournament starts at ten." in answer.text  # quoted, unphrased


async def test_the_model_router_sends_a_recap_in_another_language(memory, llm, settings):
    if llm.is_offline:
        pytest.skip("offline, the router answers chat: the fast path's English phrasings are the recaps")
    ids = await a_day(memory)
    answer = await responder_for(memory, llm, settings).respond(asked("was habe ich verpasst?"))
    assert answer.route is Route.RECAP and link(GUILD, GENERAL, ids["tournament"]) in answer.text
