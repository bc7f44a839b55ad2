"""A model answering 429 or 500 with no retry left (none allowed, or none that lands in time) falls back at once.

Wired as `run` wires it (open_app, the real google-genai client against the stub) with the shipped deadline,
attempts and back-off: the answer is the offline one that says the model is failing, not the slow answer the
deadline gives, and the router was asked once (no retry slept into the deadline).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bot import answer_due
from bot.app import open_app
from bot.reply.deadline import SLOW
from fakes.gemini_stub import GeminiStub, error
from tests.reply.test_deadline import ask, seed, settings_for, sqlite_url  # noqa: F401 -- fixtures

HANG_GUARD = 60.0  # a reply that waited for retries would take the deadline (10 s) each; this only stops a hang
FAILING = "The model is failing right now"


def routed(server: GeminiStub) -> int:
    return sum("request router" in r.prompt_text for r in server.requests)


@pytest.mark.parametrize(
    ("fault", "attempts"),
    [("429 asking for 20 s", 4), ("500", 1)],  # 429: the shipped 4 attempts, none fits; 500: no retry allowed
)
async def test_a_failing_model_is_answered_offline_at_once_not_at_the_deadline(sqlite_url, stub, fault, attempts):  # noqa: F811
    await seed(sqlite_url, stub)
    status, delay = (429, "20s") if fault.startswith("429") else (500, None)
    stub.responder = lambda request: error(status, retry_delay=delay)
    settings = settings_for(sqlite_url, stub.base_url, reply_deadline_seconds=10.0, llm_max_attempts=attempts)
    async with open_app(settings) as app:
        for i in range(3):
            before = routed(stub)
            async with asyncio.timeout(HANG_GUARD):
                answer = await app.responder.respond_within(ask(f"how are you today, take {i}?"), deadline=10.0)
            assert SLOW not in answer.text, answer.text  # the deadline did not have to answer for it
            assert FAILING in answer.text, answer.text
            assert routed(stub) - before <= 1  # asked once, or not at all once the breaker opened
        await app.responder.drain(0)


def test_a_retry_must_fit_in_half_the_time_left() -> None:
    assert not answer_due.no_time_for(30.0)  # no reply under way: background work keeps its retries
    with answer_due.answer_by(10.0):
        assert not answer_due.no_time_for(1.5)  # 1.5 + 1 s for the try fit in 5
        assert answer_due.no_time_for(4.5)
        assert answer_due.no_time_for(20.0)  # a 429's usual retry delay


async def test_background_work_a_reply_starts_keeps_its_retries() -> None:
    from bot.lifecycle import spawn
    from bot.memory.flight import SingleFlight

    async def left() -> float | None:
        return answer_due.time_left()

    with answer_due.answer_by(10.0):
        assert answer_due.time_left() is not None
        assert await spawn(left(), name="test") is None
        assert await SingleFlight().run("key", left) is None
        assert await asyncio.create_task(left()) is not None  # a reply's own helpers are hurried with it


def test_time_left_counts_down() -> None:
    with answer_due.answer_by(5.0):
        left = answer_due.time_left()
        assert left is not None and 0 < left <= 5.0
        time.sleep(0.01)
        assert answer_due.time_left() < left  # type: ignore[operator]
    assert answer_due.time_left() is None
