"""A build that began before a change never answers a question asked after it (both databases, real client).

With a slow model the context build outlives the latency guard and goes on in the background. If "forget
that …" lands meanwhile, the next "what do you know about me?" must not join that build: it read the facts
and the day's messages before they were forgotten. (Seen in the console on a busy machine: /context printed
the fact the bot had just said it forgot.)
"""

from __future__ import annotations

import pytest

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from fakes.gemini_stub import GeminiStub, StubRequest
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from tests.factories import ALICE, GUILD, T0, message, minutes

SLOW_SUMMARY = 0.8  # seconds the model takes for a day's summary; the guard gives up after 0.3


def slow_summaries(request: StubRequest):
    reply = scripted_model(request)
    if "<transcript>" in request.prompt_text:
        reply.delay = SLOW_SUMMARY
    return reply


@pytest.fixture
async def memory(engine, settings):
    stub = await GeminiStub(responder=slow_summaries).start()
    llm = model_stack(
        stub.base_url, timeout_s=5, concurrency=4, requests_per_minute=10_000, breaker_failures=5, wait=(0.01, 0.05)
    )
    settings = settings.model_copy(update={"memory_wait_seconds": 0.3})
    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(T0 + minutes(60)))
    await memory.start()
    yield memory
    await memory.close()
    await llm.close()
    await stub.stop()


async def test_a_question_after_forget_does_not_join_a_build_from_before_it(memory):
    memory.directory.note_name(GUILD, ALICE, "alice", "alice")
    await memory.facts.remember(GUILD, ALICE, "alice likes green tea", requested_by=ALICE)
    await memory.intake.message(message("I like green tea, and I am training for a marathon", at=T0))
    await memory.intake.message(message("lovely weather for a run", at=T0 + minutes(1)))
    await memory.flush()

    first = await memory.recollection.context(GUILD, ALICE)  # the guard answers; the build waits on the model
    assert first is not None and "green tea" in first
    change = await memory.facts.forget(GUILD, ALICE, "I like green tea", requested_by=ALICE)
    assert change.found and "green tea" not in change.after
    # The next question is patient: whatever it gets is a finished build, and it must be one from after forget.
    memory.settings.memory_wait_seconds = 5 * SLOW_SUMMARY
    after = await memory.recollection.context(GUILD, ALICE)
    # A context of the day built after the forget (the message now reads "I am training for a marathon") repeats
    # nothing forgotten.
    assert after is not None and "marathon" in after
    assert "green tea" not in after
