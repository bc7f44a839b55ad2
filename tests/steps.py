"""How a coroutine ran, for tests that prove "it did not wait" by counting steps instead of timing them."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def at_once(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`, which must finish without once giving the event loop back (it waited for nothing)."""
    try:
        work.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    work.close()
    raise AssertionError(f"{work.__qualname__} waited")
