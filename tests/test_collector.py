"""Full garbage collections wait for a moment without a reply (bot/collector.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest

from bot import collector
from bot.app import open_app
from bot.collector import NEVER, collect_between_replies
from bot.lifecycle import running
from bot.memory.recall.embedding import Replies

pytestmark = pytest.mark.skipif(not collector.wanted(), reason="Python 3.14+ keeps CPython's incremental collector")


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


@asynccontextmanager
async def collecting(replies: Replies, waiting: asyncio.Event | None = None) -> AsyncIterator[asyncio.Task[None]]:
    """A collector running (its first step taken), stopped after; `waiting` is set when it asks for a gap."""

    async def between(work: Callable[[], object], seconds: float) -> object:
        if waiting is not None:
            waiting.set()
        return await replies.between(work, seconds)

    task = asyncio.create_task(collect_between_replies(between))
    await asyncio.sleep(0)
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class Cycle:
    def __init__(self) -> None:
        self.me = self


def due() -> asyncio.Event:
    """A full collection due (as many middle-generation collections as allocating makes before one) and garbage
    only a full collection finds (a cycle that outlived them, in the oldest generation, then let go): an event set
    when the garbage is freed."""
    gc.collect()
    cycle = Cycle()
    for _ in range(collector.FULL_AFTER):
        gc.collect(1)
    freed = asyncio.Event()
    weakref.finalize(cycle, freed.set)
    del cycle
    return freed


async def freed(garbage: asyncio.Event, within: float = 30.0) -> bool:
    """Whether a collection freed the garbage (`within` seconds only guards against a hang)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            await garbage.wait()
    return garbage.is_set()


@pytest.fixture
def often(monkeypatch):
    monkeypatch.setattr(collector, "FULL_EVERY_SECONDS", 0.01)
    monkeypatch.setattr(collector, "COST_SHARE", 0)


async def test_a_full_collection_waits_for_the_reply_under_way_then_collects_the_garbage(often, monkeypatch):
    monkeypatch.setattr(collector, "FULL_WAIT_SECONDS", 3600)  # only the reply's end can let it go, however slow
    before = gc.get_threshold()
    replies, waiting = Replies(), asyncio.Event()
    async with collecting(replies, waiting):
        assert gc.get_threshold()[2] == NEVER
        with full_collections() as ended:
            async with replies.under_way():
                garbage = due()
                ended.clear()
                await asyncio.wait_for(waiting.wait(), 30)  # the collection is due, and waits for the reply
                await asyncio.sleep(0.1)
                assert ended == [] and not garbage.is_set()
                reply_ended = time.monotonic()
            assert await freed(garbage)
            assert ended and ended[0] >= reply_ended
    assert gc.get_threshold() == before


async def test_a_full_collection_due_runs_as_the_reply_ends_before_one_asked_at_once_begins(often, monkeypatch):
    """Back-to-back questions (bench.soak's probes, a busy guild): a waiter woken by one reply's end ran after the
    loop turned, inside the next reply — month 12's 90 ms collection was the soak's recall p99."""
    monkeypatch.setattr(collector, "FULL_WAIT_SECONDS", 3600)
    replies, waiting = Replies(), asyncio.Event()
    async with collecting(replies, waiting):
        with full_collections() as ended:
            async with replies.under_way():
                garbage = due()
                ended.clear()
                await asyncio.wait_for(waiting.wait(), 30)
                assert ended == []
            assert garbage.is_set() and len(ended) == 1  # no await since: in the gap itself
            async with replies.under_way():  # no await between the two: the loop has not turned
                await asyncio.sleep(0.1)
            assert len(ended) == 1  # none inside the second


async def test_work_for_a_gap_runs_once_and_not_after_its_waiter_gave_up():
    replies, ran = Replies(), []
    assert await replies.between(lambda: ran.append("now"), 1.0)  # no reply under way: at once
    async with replies.under_way():
        waiter = asyncio.create_task(replies.between(lambda: ran.append("cancelled"), 3600))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        late = await replies.between(lambda: ran.append("late"), 0.05)  # replies never leave a gap: anyway
    assert late is False and ran == ["now", "late"]


async def test_a_waiter_cancelled_just_before_the_gap_leaves_the_replys_end_alone():
    """Cancelling a task cancels the future it waits on at once, and its own clean-up runs later: a reply ending in
    between must neither run the work nor fail on the cancelled future."""
    replies, ran = Replies(), []
    async with replies.under_way():
        waiter = asyncio.create_task(replies.between(lambda: ran.append("work"), 3600))
        await asyncio.sleep(0.01)
        waiter.cancel()  # its future is cancelled now; its `finally` has not run yet
    await asyncio.gather(waiter, return_exceptions=True)
    assert ran == [] and waiter.cancelled()


async def test_a_reply_that_never_ends_holds_a_full_collection_back_for_full_wait_seconds_only(often, monkeypatch):
    monkeypatch.setattr(collector, "FULL_WAIT_SECONDS", 0.1)
    replies = Replies()
    async with collecting(replies), replies.under_way():
        assert await freed(due())


async def test_a_costly_full_collection_is_followed_by_a_longer_pause(often, monkeypatch):
    monkeypatch.setattr(collector, "COST_SHARE", 1_000_000)  # any collection: over a second of pause after it
    async with collecting(Replies()):
        assert await freed(due())
        second = due()
        await asyncio.sleep(0.3)
        assert not second.is_set()  # due, and no reply under way: the pause is what holds it back


async def test_no_full_collection_before_enough_middle_generation_collections(often):
    async with collecting(Replies()):
        gc.collect()
        with full_collections() as ended:
            gc.collect(1)  # one, not FULL_AFTER
            await asyncio.sleep(0.2)
            assert ended == []


async def test_allocating_starts_no_full_collection_while_it_runs(monkeypatch):
    monkeypatch.setattr(collector, "FULL_EVERY_SECONDS", 3600)
    before = gc.get_threshold()
    async with collecting(Replies()):
        young, middle, _ = gc.get_threshold()
        with full_collections() as ended:
            kept = [[i] for i in range(young * middle * 30)]  # thirty middle-generation collections' worth
            assert ended == []
        del kept
    assert gc.get_threshold() == before  # CPython's own rule again


async def test_collectors_that_overlap_keep_the_policy_until_the_last_stops_and_restore_the_original(monkeypatch):
    monkeypatch.setattr(collector, "FULL_EVERY_SECONDS", 3600)
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], 50)
    try:
        first = asyncio.create_task(collect_between_replies(Replies().quiet))
        await asyncio.sleep(0)
        async with collecting(Replies()):
            first.cancel()  # the first to start stops first
            await asyncio.gather(first, return_exceptions=True)
            assert gc.get_threshold()[2] == NEVER  # the other still runs
        assert gc.get_threshold() == (before[0], before[1], 50)
    finally:
        gc.set_threshold(*before)


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
