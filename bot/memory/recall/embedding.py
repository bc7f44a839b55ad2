"""Embedding messages in the background: what arrives now first, then the backlog (an import, a fresh install).

Ingestion hands every stored message of people to `note`; a worker embeds them in batches, newest first, at
most pending.PER_GUILD waiting per guild (the model runs in a process or thread of its own at the lowest CPU
priority, so the event loop is free), stores the vectors through the write-behind queue (after their
message, in order; a vector whose message is gone by then is dropped by the database) and adds them to the
in-process index. When nothing new waits and there may be some, it embeds the newest messages that have no vector
yet: at start, after a drop (an import, an edit, a purge, here or in another process), after a failure, and every
RESCAN_SECONDS for what other processes stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.faults import Fault, storage_trouble
from bot.llm.embeddings import Embedder, Task
from bot.memory.recall.pending import Pending, PendingTexts
from bot.memory.recall.vectors import VectorIndex, quantize
from bot.settings import Settings
from db import vectors as store
from db.records import MessageVector

log = logging.getLogger(__name__)
SOURCE = "embedding"
BATCH = 64
BACKLOG_BATCH = 256
# An encoder on this machine's CPU (`Embedder.local`) runs a batch in slices of this many texts (~10 ms): a reply
# that begins meanwhile waits for one slice at most, not for the batch (a remote one takes the batch in one call).
SLICE = 4
IDLE_SECONDS = 2.0
# Looking for messages without a vector walks the messages newest first until it has BACKLOG_BATCH of them: with
# none left it walks them all (15 ms at 100,000 messages). Run after every batch, as it was, at 50 messages a second
# that was a third of a core, taken from replies; now only when there may be a backlog, and this often.
RESCAN_SECONDS = 30.0
YIELD_SECONDS = 1.0  # the longest a batch waits for replies under way (a busy guild's embedding still goes on)


class Replies:
    """Replies under way: a batch of background embedding waits until there are none (both want the CPU, and a
    member is waiting on the reply; a vector can wait a second), for up to YIELD_SECONDS; so does a batch of
    ingest the flush window lets go (bot/memory/intake/queue.py), for up to FLUSH_YIELD_SECONDS."""

    def __init__(self) -> None:
        self._under_way = 0
        self._quiet = asyncio.Event()
        self._quiet.set()
        self._gap: list[Callable[[], None]] = []  # run as the last reply under way ends (`between`)

    @contextlib.asynccontextmanager
    async def under_way(self) -> AsyncIterator[None]:
        """Mark a reply (or a search) under way for its duration."""
        self._under_way += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self._under_way -= 1
            if not self._under_way:
                self._quiet.set()
                waiting, self._gap = self._gap, []
                for run in waiting:
                    run()

    async def between(self, work: Callable[[], object], within: float) -> bool:
        """Run `work` (synchronous, on the loop) when no reply is under way: now if none is, else as the last one
        ends, before the loop turns — a reply asked for at once (back-to-back questions) begins after it, where a
        waiter woken by the end ran inside that next reply (bench.soak: a full collection of month 12's heap, 90 ms,
        was its recall's p99). After `within` seconds of replies that always overlap, run it anyway. True: in a gap."""
        if not self._under_way:
            work()
            return True
        ran = asyncio.get_running_loop().create_future()

        def run() -> None:  # in the reply's exit: what `work` raises is the waiter's, not the reply's
            if ran.done():  # its waiter was cancelled and has not yet taken it back: nothing is wanted
                return
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - handed to the waiter, who raises it
                ran.set_exception(exc)
            else:
                ran.set_result(None)

        self._gap.append(run)
        try:
            with contextlib.suppress(TimeoutError):  # not wait_for: on 3.11 it can swallow a cancel
                async with asyncio.timeout(max(0.0, within)):
                    await ran
                    return True
        finally:
            if run in self._gap:  # timed out or cancelled: not left for a later gap
                self._gap.remove(run)
        work()
        return False

    async def quiet(self, within: float | None = None) -> bool:
        """Return when no reply is under way (True), or after `within` seconds (YIELD_SECONDS) (False)."""
        with contextlib.suppress(TimeoutError):  # not wait_for: on 3.11 it can swallow a cancel
            async with asyncio.timeout(max(0.0, YIELD_SECONDS if within is None else within)):
                # Woken as one reply ended, a waiter runs after the next has begun if that one began before the loop
                # turned (back-to-back questions): it waits on for that one (work that must run in the gap itself
                # asks `between`).
                while self._under_way:
                    await self._quiet.wait()
                return True
        return False


def encoder(embedder: Embedder, task: Task) -> Callable[[list[str]], Awaitable[np.ndarray]]:
    """Any embedder as `texts -> unit-length float32 rows` (the local model gives arrays; Gemini gives lists)."""

    async def encode(texts: list[str]) -> np.ndarray:
        array = getattr(embedder, "embed_array", None)
        vectors = (
            await array(texts, task=task)
            if array is not None
            else np.asarray(await embedder.embed(texts, task=task), dtype=np.float32)
        )
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    return encode


def dimensions_of(embedder: Embedder, settings: Settings) -> int:
    """How long the embedder's vectors are."""
    return int(getattr(embedder, "dimensions", None) or settings.embedding_dimensions)


class EmbeddingWorker:
    """Keeps every stored message of people embedded, newest first."""

    def __init__(
        self,
        encode: Callable[[list[str]], Awaitable[np.ndarray]],
        index: VectorIndex,
        store_vector: Callable[[MessageVector], Awaitable[None]],
        sessions: async_sessionmaker[AsyncSession],
        flush: Callable[[], Awaitable[None]],
        *,
        replies: Replies | None = None,
        local: bool = False,
        fault: Fault | None = None,
    ) -> None:
        self._storage = fault or Fault("storage")
        self._model = Fault("the embedding model")  # its failures are not storage's
        self._encode = encode
        self._slice = SLICE if local else None  # None: a batch in one call
        self._replies = replies or Replies()
        self._flush = flush  # the backlog is read from SQL: what was embedded must be stored before the next read
        self._index = index
        self._store = store_vector
        self._sessions = sessions
        self._pending = PendingTexts()  # bounded per guild, newest first
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._asked = 1  # looks asked for (a fresh start asks one): there may be messages without a vector
        self._looked = 0  # of those, the ones a finished look began after
        self._scanned = -math.inf  # time.monotonic() of the last look
        self._epochs: dict[int, int] = {}  # a guild's count of drops: a batch embedded across one is discarded
        self._in_hand = 0  # the batch being embedded now
        self.embedded = 0
        self.skipped = 0  # noted again but already embedded (catch-up's re-reading): not embedded again

    @property
    def backlog(self) -> int:
        """Messages waiting to be embedded that the worker knows of: those noted and the batch in hand (messages
        stored without being noted, by another process or an import, count once a scan of the backlog took them)."""
        return len(self._pending) + self._in_hand

    @property
    def waiting(self) -> int:
        """Texts noted and not embedded yet (at most pending.PER_GUILD a guild; older ones wait as backlog)."""
        return len(self._pending)

    @property
    def let_go(self) -> int:
        """Texts let go to the backlog scan since start, because their guild had PER_GUILD newer ones waiting."""
        return self._pending.dropped

    def note(self, message_id: int, guild_id: int, text: str, user_id: int, at: datetime) -> None:
        """A message (or its new text) to embed soon."""
        if text.strip():
            if not self._pending.add(Pending(message_id, guild_id, text, user_id, at.timestamp())):
                self._asked += 1  # an older text was let go: the backlog scan finds it once nothing new waits
            self._wake.set()

    def drop(self, guild_id: int) -> None:
        """Messages of the guild were deleted or rewritten: forget the texts waiting here (those still stored and
        without a vector come back from the backlog as they are now), and discard a batch being embedded."""
        self._pending.forget(guild_id)
        self._epochs[guild_id] = self._epochs.get(guild_id, 0) + 1
        self._look_again()

    def _look_again(self) -> None:
        self._asked += 1
        self._wake.set()

    def start(self) -> None:
        """Start the worker (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="elefant-embedding")

    async def idle(self) -> None:
        """Wait until what was noted so far, and the backlog, are embedded (tests, benchmarks, imports)."""
        self._look_again()  # what was stored without being noted here (another process, a bulk write) too
        while self._pending or self._looked < self._asked:  # a look that began after this call found none
            self._wake.set()
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        """Stop; what is not embedded yet is found again as backlog next time."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                # Before taking a batch: a drop while waiting must still reach it. Replies that never stop (a busy
                # guild, a slow model) get a larger batch each second, so embedding keeps up with the messages.
                until = time.monotonic() + YIELD_SECONDS  # the most a batch waits for replies, in all
                size = BATCH if await self._replies.quiet() else BACKLOG_BATCH
                epochs = dict(self._epochs)  # a guild dropped from here on: its part of the batch is discarded
                if self._pending:
                    batch = await self._not_embedded(self._pending.take(size))
                    if not batch:
                        continue
                elif self._looked < self._asked or time.monotonic() - self._scanned >= RESCAN_SECONDS:
                    asked = self._asked
                    await self._flush()  # what was just embedded must be stored, or it reads as backlog
                    batch = await self._backlog()
                    self._scanned = time.monotonic()
                    self._looked = asked - 1 if batch else asked  # more may wait behind these: look until none do
                else:
                    batch = []
                if not batch:
                    self._wake.clear()
                    if self._pending or self._looked < self._asked:  # noted or dropped during the look
                        continue
                    with contextlib.suppress(TimeoutError):  # not wait_for: on 3.11 it can swallow a cancel
                        async with asyncio.timeout(max(0.0, self._scanned + RESCAN_SECONDS - time.monotonic())):
                            await self._wake.wait()
                    continue
                self._in_hand = len(batch)
                try:
                    await self._embed(batch, epochs, until)
                finally:
                    self._in_hand = 0
                self._storage.ok(SOURCE)
                self._model.ok(SOURCE)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a fault logs it; the backlog keeps the work meanwhile
                (self._storage if storage_trouble(exc) else self._model).failed(exc, source=SOURCE)
                self._look_again()  # a batch taken from the noted messages is found again there
                await asyncio.sleep(IDLE_SECONDS)

    async def _not_embedded(self, batch: list[Pending]) -> list[Pending]:
        """The batch without the messages that already have a vector (catch-up reads an hour back at every
        connect: after a restart, ~31,000 embeddings were made again for 18,000 messages). The message's own row is
        not read: one read of its vector by key is all, and its text cannot have changed since (an edit drops it)."""
        async with self._sessions() as session:
            done = await store.embedded_among(session, [p.message_id for p in batch], self._index.model)
        self.skipped += len(done)
        return [p for p in batch if p.message_id not in done] if done else batch

    async def _backlog(self) -> list[Pending]:
        async with self._sessions() as session:
            rows = await store.unembedded(session, self._index.model, limit=BACKLOG_BATCH)
        return [Pending(r.message_id, r.guild_id, r.text, r.user_id, r.at.timestamp()) for r in rows]

    async def _embed(self, batch: list[Pending], epochs: dict[int, int], until: float) -> None:
        texts = [p.text for p in batch]
        step = self._slice or len(texts)
        parts = [await self._encode(texts[:step])]
        # Between slices a reply that began goes first, while the batch has waited less than YIELD_SECONDS.
        for start in range(step, len(texts), step):
            await self._replies.quiet(until - time.monotonic())
            parts.append(await self._encode(texts[start : start + step]))
        vectors = np.vstack(parts)
        kept = [i for i, p in enumerate(batch) if self._epochs.get(p.guild_id, 0) == epochs.get(p.guild_id, 0)]
        if len(kept) < len(batch):
            batch, vectors = [batch[i] for i in kept], vectors[kept]
        for pending, (blob, scale) in zip(batch, quantize(vectors), strict=True):
            await self._store(
                MessageVector(pending.message_id, pending.guild_id, self._index.model, blob, scale, pending.text)
            )
        by_guild: dict[int, list[int]] = {}
        for i, pending in enumerate(batch):
            by_guild.setdefault(pending.guild_id, []).append(i)
        for guild_id, rows in by_guild.items():
            self._index.add(
                guild_id,
                [batch[i].message_id for i in rows],
                vectors[rows],
                [batch[i].user_id for i in rows],
                [batch[i].at for i in rows],
            )
        self.embedded += len(batch)
