"""A hang the per-test time-out cannot interrupt ends its own test, by name, and the run goes on.

pytest-timeout fails a test that runs past `timeout` by raising in it; a hang it cannot reach (the event loop's
own teardown, a signal handler replaced, a C call that retries on EINTR) is ended here: `grace` seconds later every
thread's stack is printed and the process exits. Under pytest-xdist that process is one worker: the controller
reports the test it was running as failed ("worker crashed while running …"), starts another worker, and the run
finishes with its summary. (A whole-suite limit used to do this job, killing the run without naming a test.)
"""

from __future__ import annotations

import faulthandler
import sys
from collections.abc import Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("hang_guard_grace", "seconds past a test's time-out before its process is ended", default="60")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    limit = _timeout(item)
    if limit > 0:
        faulthandler.dump_traceback_later(
            limit + float(item.config.getini("hang_guard_grace")), exit=True, file=sys.stderr
        )
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    option = item.config.getoption("timeout", None)
    return float(option if option is not None else item.config.getini("timeout") or 0)
