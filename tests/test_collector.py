"""Full garbage collections wait for a moment without a reply (bot/collector.py)."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bot import collector
from bot.app import open_app
from bot.collector import NEVER, collect_between_replies
from bot.lifecycle import running
from bot.memory.embedding import Replies


@contextmanager
def full_collections() -> Iterator[list[float]]:
    """When each full collection (of anyone) ended, while inside."""
    ended: list[float] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            ended.append(time.monotonic())

    gc.callbacks.append(seen)
    try:
        yield ended
    finally:
        gc.callbacks.remove(seen)


class Cycle:
    def __init__(self) -> None:
        self.me = self


async def test_a_full_collection_waits_for_the_reply_under_way_then_collects_its_garbage(monkeypatch):
    monkeypatch.setattr(collector, "FULL_EVERY_SECONDS", 0.01)
    before = gc.get_threshold()
    replies = Replies()
    with full_collections() as ended:
        async with replies.under_way():
            task = asyncio.create_task(collect_between_replies(replies.quiet))
            await asyncio.sleep(0)
            assert gc.get_threshold()[2] == NEVER
            gc.collect()
            ended.clear()
            for _ in range(collector.FULL_AFTER):
                gc.collect(1)  # what allocating does: the middle generation is collected, again and again
            Cycle()  # garbage only a full collection finds (the middle ones saw no such object)
            await asyncio.sleep(0.3)
            assert ended == []  # a reply is under way (FULL_WAIT_SECONDS: 5)
            reply_ended = time.monotonic()
        await asyncio.sleep(0.1)
        assert len(ended) == 1 and ended[0] >= reply_ended
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert gc.get_threshold() == before


async def test_allocating_starts_no_full_collection_while_it_runs(monkeypatch):
    monkeypatch.setattr(collector, "FULL_EVERY_SECONDS", 3600)
    task = asyncio.create_task(collect_between_replies(Replies().quiet))
    await asyncio.sleep(0)
    young, middle, _ = gc.get_threshold()
    with full_collections() as ended:
        kept = [[i] for i in range(young * middle * 30)]  # thirty middle-generation collections' worth
        assert ended == []
    del kept
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    with full_collections() as ended:
        kept = [[i] for i in range(young * middle * 30)]
        assert ended  # CPython's own rule again
    del kept


async def test_the_long_running_app_runs_the_collector_and_stops_it_on_exit(settings):
    before = gc.get_threshold()
    async with open_app(settings, background=True):
        await asyncio.sleep(0)  # its first step
        assert "garbage collector" in running()
        assert gc.get_threshold()[2] == NEVER
    assert "garbage collector" not in running()
    assert gc.get_threshold() == before
    async with open_app(settings):  # a short command: CPython's own rule
        assert "garbage collector" not in running()
