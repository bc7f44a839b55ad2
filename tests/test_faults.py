"""bot/faults.py: one line per fault state — down, still down (at most once a minute), back — with tracebacks
once per new kind of cause."""

from __future__ import annotations

import asyncio
import logging
import socket

import asyncpg
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from bot.faults import Fault, describe, storage_trouble

LOGGER = "tests.faults"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.DEBUG, logger=LOGGER)

    def at(level: int) -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == LOGGER and r.levelno == level]

    return at


def refused(message: str = "connection refused") -> OperationalError:
    try:
        raise OperationalError("INSERT INTO chat_history VALUES (?)", ("what a member wrote",), OSError(message))
    except OperationalError as exc:
        return exc


def storage(clock: Clock) -> Fault:
    return Fault("storage", logger=logging.getLogger(LOGGER), clock=clock)


def test_a_burst_of_failures_is_one_down_line_and_one_back_line(clock, lines):
    fault = storage(clock)
    fault.holds("messages held", lambda: 1963)
    for _ in range(500):
        fault.failed(refused(), source="ingest")
        clock.now += 0.1  # 50 s in all: no reminder yet
    fault.ok("ingest", replayed="writing 1,963 held")
    [down] = lines(logging.WARNING)
    assert down.getMessage() == "storage down (ingest): OSError: connection refused; 1,963 messages held"
    assert down.exc_info is not None  # the first time this kind of cause is seen: with its traceback
    [back] = lines(logging.INFO)
    assert back.getMessage() == "storage back after 50 s (500 failed attempts: ingest 500); writing 1,963 held"
    assert not fault.down and fault.episodes == 1


def test_still_down_at_most_once_a_minute_with_what_is_held(clock, lines):
    fault = storage(clock)
    held = [0]
    fault.holds("messages held", lambda: held[0])
    for second in range(185):  # a failure a second for a bit over three minutes
        held[0] = second * 10
        fault.failed(refused(), source="ingest")
        clock.now += 1
    messages = [r.getMessage() for r in lines(logging.WARNING)]
    assert len(messages) == 4, messages  # down at 0 s, still down at 60, 120, 180 s
    assert messages[1].startswith("storage still down for 60 s: 600 messages held, 61 failed attempts")
    assert messages[3].startswith("storage still down for 180 s: 1,800 messages held")
    assert all(r.exc_info is None for r in lines(logging.WARNING)[1:])  # reminders carry no traceback


def test_a_traceback_once_per_new_kind_of_cause_else_at_debug(clock, lines):
    fault = storage(clock)
    for _ in range(3):  # three outages with the same cause
        fault.failed(refused(), source="ingest")
        fault.ok("ingest")
    fault.failed(TimeoutError("pool exhausted"), source="ingest")  # a new kind of cause
    downs = [r for r in lines(logging.WARNING) if " down " in r.getMessage()]
    assert [r.exc_info is not None for r in downs] == [True, False, False, True]
    debug = [r for r in lines(logging.DEBUG) if r.exc_info is not None]
    assert len(debug) == 4  # every traceback is still there for whoever turns DEBUG on


def test_a_source_still_failing_holds_it_down_a_one_off_does_not(clock, lines):
    fault = storage(clock)
    fault.failed(refused(), source="ingest")
    fault.failed(refused(), source="change feed")
    fault.ok("ingest", replayed="writing 12 held")
    assert fault.down and not lines(logging.INFO)  # the change feed still fails
    fault.ok("change feed")
    assert not fault.down
    [back] = lines(logging.INFO)
    assert back.getMessage().endswith("(2 failed attempts: change feed 1, ingest 1); writing 12 held")
    fault.failed(refused(), source="reply", hold=False)  # a reply met the outage; nothing retries it
    fault.served("replies from caches")
    fault.ok("change feed")  # any success then says back
    assert not fault.down
    assert lines(logging.INFO)[-1].getMessage().endswith("(1 failed attempts: reply 1), 1 replies from caches")


def test_a_cause_is_its_type_and_first_line_never_the_statement_or_its_parameters():
    exc = refused("could not connect\nDETAIL: more")
    assert describe(exc) == "OSError: could not connect"
    assert "what a member wrote" not in describe(exc) and "INSERT" not in describe(exc)
    assert storage_trouble(exc)
    assert not storage_trouble(IntegrityError("INSERT", {}, ValueError("duplicate")))  # a row refused, not storage
    assert not storage_trouble(ValueError("a bug"))


async def test_a_refused_connection_is_storage_trouble_when_the_driver_raised_it_not_the_model():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError) as driver:  # asyncpg raises it unwrapped
        await asyncpg.connect(host="127.0.0.1", port=port, user="postgres", timeout=5)
    assert storage_trouble(driver.value)
    with pytest.raises(OSError) as transport:  # the model's HTTP connection: the same class, not storage
        await asyncio.open_connection("127.0.0.1", port)
    assert not storage_trouble(transport.value) and not storage_trouble(TimeoutError("the model timed out"))
