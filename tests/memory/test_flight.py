"""SingleFlight: what a shared computation raises is read even when every asker gave up on it."""

from __future__ import annotations

import asyncio
import gc

import pytest

from bot.memory.flight import SingleFlight


async def test_a_failure_after_every_asker_gave_up_is_never_left_unretrieved(caplog: pytest.LogCaptureFixture) -> None:
    release = asyncio.Event()

    async def fails_later() -> None:
        await release.wait()
        raise OSError("storage went away")

    flight = SingleFlight()
    asker = asyncio.ensure_future(flight.run("key", fails_later))
    await asyncio.sleep(0)
    asker.cancel()  # the reply that asked ran out of time; the computation goes on, shared
    with pytest.raises(asyncio.CancelledError):
        await asker
    release.set()
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()  # asyncio reports an unread exception when its task is collected
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_an_asker_still_waiting_gets_the_failure() -> None:
    async def fails() -> None:
        raise OSError("storage went away")

    with pytest.raises(OSError, match="storage went away"):
        await SingleFlight().run("key", fails)
