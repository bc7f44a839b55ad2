"""The circuit breaker's log: open once (with the cause), a failing probe at most once a minute, closed once."""

from __future__ import annotations

import logging

from bot.llm.breaker import CircuitBreaker, State


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_of_the_model_is_open_still_open_once_a_minute_and_closed(caplog):
    caplog.set_level(logging.DEBUG, logger="bot.llm.breaker")
    clock = Clock()
    breaker = CircuitBreaker(failures=3, cooldown=10, clock=clock, name="gemini-x")
    for _ in range(3):
        assert breaker.allow()
        breaker.failure("503 UNAVAILABLE: overloaded")
    assert breaker.state is State.OPEN
    for _ in range(18):  # three minutes of probes every cool-down, each failing
        clock.now += 10
        assert breaker.allow() and not breaker.allow()  # one probe at a time
        breaker.failure("503 UNAVAILABLE: overloaded")
    clock.now += 10
    assert breaker.allow()
    breaker.success()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert said[0] == (
        "gemini-x circuit breaker open: 503 UNAVAILABLE: overloaded (3 failures in a row; offline answers for 10 s, "
        "then one probe)"
    )
    assert [line.split(" for ")[0] for line in said[1:-1]] == ["gemini-x circuit breaker still open"] * 3
    assert said[-1].startswith("gemini-x circuit breaker closed after 190 s (19 failed attempts)")  # 1 + 18 probes
    assert breaker.state is State.CLOSED
