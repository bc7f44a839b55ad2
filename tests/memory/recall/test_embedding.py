"""The background embedding worker's loop alone (encoder, index and store stand in): what wakes it, and how
much it takes when replies never stop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import numpy as np
import pytest

from bot.memory.recall import embedding
from bot.memory.recall.embedding import EmbeddingWorker, Replies


class Index:
    model = "model"

    def add(self, *args: object) -> None:
        pass


def worker(
    looks: list[float], batches: list[int], replies: Replies | None = None, *, local: bool = False, encoding: float = 0
) -> EmbeddingWorker:
    async def encode(texts: list[str]) -> np.ndarray:
        batches.append(len(texts))
        await asyncio.sleep(encoding)
        return np.full((len(texts), 4), 0.5, dtype=np.float32)

    async def store(vector: object) -> None:
        pass

    async def flush() -> None:
        pass

    class Looking(EmbeddingWorker):
        async def _backlog(self) -> list[embedding.Pending]:
            looks.append(asyncio.get_running_loop().time())
            await asyncio.sleep(0.1)  # a look in flight (the walk over the messages)
            return []

        async def _not_embedded(self, batch: list[embedding.Pending]) -> list[embedding.Pending]:
            return batch  # no store stands in here: nothing is embedded already

    return Looking(encode, Index(), store, None, flush, replies=replies, local=local)  # type: ignore[arg-type]


async def test_a_drop_during_a_look_is_looked_at_again_soon():
    """An edit's vector forgotten in SQL after a look read past it: the drop asks for another look, which comes
    at once, not at the next periodic one (RESCAN_SECONDS)."""
    looks: list[float] = []
    running = worker(looks, [])
    running.start()
    await asyncio.sleep(0.05)
    assert len(looks) == 1  # the start's look, in flight
    running.drop(1)
    await asyncio.sleep(0.5)
    await running.close()
    assert len(looks) == 2


async def test_a_message_noted_during_a_look_is_embedded_soon():
    looks: list[float] = []
    running = worker(looks, [])
    running.start()
    await asyncio.sleep(0.05)
    running.note(5, 1, "hello", 7, datetime.now(UTC))
    await asyncio.sleep(0.5)
    await running.close()
    assert running.embedded == 1


async def test_replies_that_never_stop_get_larger_batches(monkeypatch: pytest.MonkeyPatch):
    """A busy guild with a slow model always has a reply under way: each batch waits YIELD_SECONDS, and then
    takes up to BACKLOG_BATCH, not BATCH, so embedding keeps up with what arrives."""
    monkeypatch.setattr(embedding, "YIELD_SECONDS", 0.1)
    replies, batches = Replies(), list[int]()
    running = worker([], batches, replies)
    async with replies.under_way():
        running.start()
        for i in range(300):
            running.note(1000 + i, 1, f"message {i}", 7, datetime.now(UTC))
        await asyncio.sleep(0.5)
        assert batches[0] == embedding.BACKLOG_BATCH
    await running.idle()
    await running.close()
    assert running.embedded == 300 and batches[-1] <= embedding.BATCH


@pytest.mark.parametrize("local", [True, False])
async def test_a_reply_that_begins_during_a_local_batch_waits_for_one_slice_not_the_batch(local: bool):
    """The model on this machine's CPU runs a batch in slices of SLICE, and a reply that begins meanwhile stops the
    rest until it is done; a remote model (Gemini) gets the batch in one call."""
    replies, slices = Replies(), list[int]()
    running = worker([], slices, replies, local=local, encoding=0.02)
    running.start()
    for i in range(3 * embedding.SLICE):
        running.note(1000 + i, 1, f"message {i}", 7, datetime.now(UTC))
    await asyncio.sleep(0.01)  # the first slice (or the whole batch) is being encoded
    async with replies.under_way():
        await asyncio.sleep(0.3)
        during = sum(slices)
    await running.idle()
    await running.close()
    assert running.embedded == 3 * embedding.SLICE
    if local:
        assert during == embedding.SLICE and slices == [embedding.SLICE] * 3
    else:
        assert during == 3 * embedding.SLICE and slices == [3 * embedding.SLICE]
