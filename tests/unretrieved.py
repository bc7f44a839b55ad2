"""A pytest plugin: asyncio's "exception was never retrieved" fails the test that left it.

A task or future whose exception nobody awaited is reported by asyncio when it is collected, as an ERROR with its
whole traceback — during a database outage one per reply that recalled (issue 37): the log's one line per fault
state then drowns. So every test ends with a collection, and a report of that kind fails it. What the imports made
is frozen out of the collector once collection is done (`gc.freeze`), which keeps the per-test collection cheap.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

NEVER_RETRIEVED = ("Task exception was never retrieved", "Future exception was never retrieved")


class _Unretrieved(logging.Handler):
    """Keeps asyncio's reports of exceptions nobody retrieved."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.reports: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(NEVER_RETRIEVED):
            self.reports.append(message.splitlines()[0] + ": " + " ".join(message.splitlines()[1:2]))


_reports = _Unretrieved()


def pytest_configure(config: pytest.Config) -> None:
    logging.getLogger("asyncio").addHandler(_reports)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()  # modules, fixtures' code, test functions: never garbage, never scanned again


@pytest.fixture(autouse=True)
def _no_unretrieved_exceptions() -> Iterator[None]:
    before = len(_reports.reports)
    yield
    gc.collect()  # a finished task nobody awaited is reported when it is collected: now, not in a later test
    left = _reports.reports[before:]
    if left:
        pytest.fail(f"{len(left)} task exception(s) nobody retrieved: {left[:3]}", pytrace=False)
