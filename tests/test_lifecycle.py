"""Background work: kept referenced, and waited for by name."""

from __future__ import annotations

import asyncio

from bot.lifecycle import landed, running, spawn


async def test_landed_waits_for_the_named_work_and_what_it_started_meanwhile_and_no_other():
    done: list[str] = []
    forever = spawn(asyncio.Event().wait(), name="ingest writer")

    async def second() -> None:
        await asyncio.sleep(0.02)
        done.append("second")

    async def first() -> None:
        await asyncio.sleep(0.01)
        spawn(second(), name="rollups for a member of guild 2")  # started while the first was waited for
        done.append("first")

    spawn(first(), name="rollups for a member of guild 1")
    await asyncio.wait_for(landed("rollups for a member"), timeout=5)
    assert done == ["first", "second"]
    assert running() == ["ingest writer"]  # not waited for: another name
    forever.cancel()
    await asyncio.gather(forever, return_exceptions=True)
