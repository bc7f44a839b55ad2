"""Per-guild vector indexes (faiss) in front of the message_vectors table, which is the truth.

A guild's index is built from SQL the first time it is searched, then kept current by what this process
embeds and by a sync of rows other processes stored (by their id, every SYNC_SECONDS). Small guilds get an
exact index over half floats; from IVF_FROM vectors on, an inverted-file index (IVF, 8-bit scalars, nlist ≈ √n,
NPROBE lists searched; more for a time or a mention list), trained on the guild's own vectors, beside each
member's own exact 8-bit index (what a search kept to a member reads), all rebuilt in the background when the
guild has grown fourfold since (searches keep the old index until the new one is ready).
Deleted messages may linger in an index until it is rebuilt, but never reach anyone: every candidate is read back
through the SQL read scope.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

import faiss
import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.flight import read_failure
from bot.memory.recall.guild_vectors import GuildVectors, Span, held
from db import vectors as store

log = logging.getLogger(__name__)
# One OpenMP thread: a question's search is one vector against a guild's index (0.1 ms), and a second thread that
# the busy machine does not schedule at once keeps the first at OpenMP's barrier, on the event loop — 17 ms a
# search under bench.load and a 52 ms p99 beside other work, against 2-3 ms with one. Builds run in a thread of
# their own (`asyncio.to_thread`), where one OpenMP thread is also a bounded share of the CPU.
faiss.omp_set_num_threads(1)
IVF_FROM = 100_000
NPROBE = 24
# A search kept to a time or a list of messages scans lists until about this many vectors are seen (one kept to a
# member reads their own index): a paraphrase (cosine 0.2-0.4) may sit in any list, and among those kept to be the
# best. All lists (6 ms) at 175,000; a quarter at 1 M.
FILTERED_SCAN = 250_000
SYNC_SECONDS = 10.0


def quantize(vectors: np.ndarray) -> list[tuple[bytes, float]]:
    """Each unit vector as int8 bytes and its scale (value = int8 × scale)."""
    scales = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0
    q = np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8)
    return [(row.tobytes(), float(s)) for row, s in zip(q, scales, strict=True)]


def _columns(rows: list[store.StoredVector], dim: int) -> tuple[np.ndarray, ...]:
    """Stored rows as arrays: int8 vectors, scales, message ids, authors, times."""
    q = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.int8).reshape(len(rows), dim)
    return (
        q,
        np.array([r.scale for r in rows], dtype=np.float32),
        np.array([r.message_id for r in rows], dtype=np.int64),
        np.array([r.user_id for r in rows], dtype=np.int64),
        np.array([r.at for r in rows], dtype=np.float64),
    )


def dequantize(rows: list[tuple[bytes, float]], dim: int) -> np.ndarray:
    """The float32 vectors of stored rows."""
    if not rows:
        return np.zeros((0, dim), dtype=np.float32)
    q = np.frombuffer(b"".join(blob for blob, _ in rows), dtype=np.int8).reshape(len(rows), dim)
    return scaled(q, np.array([s for _, s in rows], dtype=np.float32))


def scaled(q: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """int8 rows × their scales as float32, multiplied in place (a second float32 copy of a million vectors is
    1.5 GB more at the index build's peak)."""
    vectors = q.astype(np.float32)
    vectors *= scales[:, None]
    return vectors


def _exact(dim: int) -> faiss.Index:
    # Half floats need no training (an empty guild can be indexed) and lose nothing a ranking would notice.
    return faiss.IndexIDMap2(faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT))


def _ivf(dim: int, sample: np.ndarray) -> faiss.Index:
    # √n lists trained on 40 vectors each, 10 rounds of k-means: at 1 M vectors, 4·√n lists on 160,000 vectors
    # took 470 s to train on this 2-core machine (the first question's index, built in the background).
    lists = max(64, int(math.sqrt(len(sample))))
    quantizer = faiss.IndexFlatIP(dim)
    ivf = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    ivf.cp.niter = 10
    ivf.train(sample[np.random.default_rng(0).permutation(len(sample))[: lists * 40]])
    ivf.nprobe = NPROBE
    # reconstruct and remove by message id (faiss's bundled stubs leave DirectMap out)
    ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]
    return ivf  # faiss's Python wrapper keeps the quantizer referenced by the index


def _codec(dim: int, vectors: np.ndarray) -> faiss.Index:
    """The trained, empty 8-bit index each member's own index is a copy of."""
    codec = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    codec.train(vectors[np.random.default_rng(0).permutation(len(vectors))[:100_000]])
    return codec


def _filtered_probes(guild: GuildVectors) -> int:
    lists = faiss.extract_index_ivf(guild.index).nlist
    return min(lists, max(NPROBE * 4, math.ceil(lists * FILTERED_SCAN / max(1, guild.size))))


def _once(index: faiss.Index, scores: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A search's results with each vector once: of the same words said again (the same vector, so the same score),
    the newest (ids as the index holds them keep time order); only tied scores are compared by vector. Ranking
    keeps one of them anyway (ranking.distinct); read, scored and ranked, the others were most of a year-old
    guild's candidates."""
    order = np.lexsort((-ids, -scores))
    scores, ids = scores[order], ids[order]
    tied = np.zeros(len(ids), dtype=bool)
    tied[1:] = scores[1:] == scores[:-1]
    if tied.any():
        group = np.flatnonzero(tied | np.append(tied[1:], False))  # every result in a tie
        vectors = np.ascontiguousarray(index.reconstruct_batch(ids[group]))
        rows = vectors.view(np.dtype((np.void, vectors.itemsize * vectors.shape[1]))).ravel()
        _, first = np.unique(rows, return_index=True)  # the same vector has the same score: one tie holds all
        tied[group] = True
        tied[group[first]] = False
    return scores[~tied], ids[~tied]


def _where(
    guild: GuildVectors, author: int | None, window: Span | None, since: float | None, among: list[int] | None
) -> tuple[faiss.Index, faiss.SearchParameters | None, tuple[faiss.IDSelector, ...]] | None:
    """The index a search reads, its parameters and the selectors they refer to; None: nothing to search."""
    own = guild.members.get(author) if author is not None and since is None and among is None else None
    if own is not None:  # a member of an IVF guild: their own index, all of it or a time of it
        if window is None:
            return own, None, ()
        selectors = guild.keep_to(author, window, None, None)
        # faiss's wrapper sets keyword arguments as attributes; its stubs declare no parameters
        return (own, faiss.SearchParameters(sel=selectors[-1]), selectors) if selectors else None  # type: ignore[call-arg]
    if all(f is None for f in (author, window, since, among)):
        return guild.index, None, ()
    selectors = guild.keep_to(author, window, since, None if among is None else held(among))
    if not selectors:
        return None
    params = (
        faiss.SearchParametersIVF(sel=selectors[-1], nprobe=_filtered_probes(guild))  # type: ignore[call-arg]
        if guild.trained_at
        else faiss.SearchParameters(sel=selectors[-1])  # type: ignore[call-arg]
    )
    return guild.index, params, selectors


def _stored(guild: GuildVectors, message_ids: list[int]) -> list[tuple[int, np.ndarray]]:
    """Each given message that has a vector in the guild's index, with it, one at a time."""
    found = []
    for message_id, as_held in zip(message_ids, held(message_ids).tolist(), strict=True):
        try:
            found.append((message_id, guild.index.reconstruct(as_held)))
        except RuntimeError:  # no vector (yet) for that message
            continue
    return found


class VectorIndex:
    """Searches a guild's message vectors; builds, syncs and drops per-guild indexes."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], model: str, dim: int) -> None:
        self._sessions = sessions
        self.model = model
        self.dim = dim
        self._guilds: dict[int, GuildVectors] = {}
        self._loading: dict[int, asyncio.Task[GuildVectors]] = {}
        self._drops: dict[int, int] = {}  # per guild: a build begun before the last drop read what was deleted

    def drop(self, guild_id: int) -> None:
        """Forget a guild's index (rebuilt from SQL on the next search): after deletions."""
        self._guilds.pop(guild_id, None)
        self._drops[guild_id] = self._drops.get(guild_id, 0) + 1

    def remove(self, guild_id: int, message_ids: list[int]) -> None:
        """Take deleted messages out of a loaded index."""
        guild = self._guilds.get(guild_id)
        if guild is not None and message_ids:
            guild.remove(held(message_ids))

    def add(
        self, guild_id: int, message_ids: list[int], vectors: np.ndarray, authors: list[int], times: list[float]
    ) -> None:
        """Vectors this process just embedded (a guild not loaded yet reads them from SQL when it is)."""
        guild = self._guilds.get(guild_id)
        if guild is None or not message_ids:
            return
        ids = held(message_ids)
        # An edit (or a message delivered twice) embeds a message again: its old vector goes first. Removing
        # scans an exact index (3 ms at 100,000 messages, every batch); a message newer than any indexed (what
        # arrives now: ids grow with time) cannot be there.
        again = ids[ids <= guild.newest]
        if len(again):
            guild.remove(again)
        vectors, by = vectors.astype(np.float32), np.array(authors, dtype=np.int64)
        guild.index.add_with_ids(vectors, ids)
        guild.index_members(vectors, ids, by)
        guild.note(ids, by, np.array(times, dtype=np.float64))
        guild.size += len(message_ids)

    async def search(
        self,
        guild_id: int,
        query: np.ndarray,
        k: int,
        *,
        author: int | None = None,
        window: Span | None = None,
        since: float | None = None,
        among: list[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The k message ids most similar to the query vector, with their cosine (index approximation); only those
        of `author`, in `window` (POSIX s), from `since`'s hour on (no `author` with it) or `among`, if given."""
        guild = await self._guild(guild_id)
        if guild.size == 0:
            return []
        where = _where(guild, author, window, since, among)
        if where is None:
            return []
        index, params, selectors = where
        scores, ids = index.search(query.reshape(1, -1).astype(np.float32), k, params=params)
        del selectors  # referenced until the search is over
        found = ids[0] >= 0
        scores, ids = _once(guild.index, scores[0][found], ids[0][found])
        return list(zip(held(ids).tolist(), scores.tolist(), strict=True))

    async def count(self, guild_id: int, author: int) -> int:
        """How many of the member's messages the guild's index holds."""
        return int(np.count_nonzero((await self._guild(guild_id)).authors == author))

    async def oldest(self, guild_id: int) -> float:
        """When the guild's oldest indexed message was written (POSIX seconds; infinity: nothing indexed)."""
        return (await self._guild(guild_id)).oldest

    async def similarity(self, guild_id: int, query: np.ndarray, message_ids: list[int]) -> dict[int, float]:
        """Cosine of the query to each given message that has a vector."""
        guild = await self._guild(guild_id)
        if not message_ids:
            return {}
        try:  # one call for all (a call per message was ~5 µs each, on the event loop)
            vectors = guild.index.reconstruct_batch(held(message_ids))
        except RuntimeError:  # one of them has no vector (yet): each on its own
            return self._one_by_one(guild, query, message_ids)
        return dict(zip(message_ids, (vectors @ query).tolist(), strict=True))

    async def vectors_of(self, guild_id: int, message_ids: list[int]) -> np.ndarray:
        """The stored vectors of the given messages that have one, as rows (none: an empty array)."""
        rows = [vector for _, vector in _stored(await self._guild(guild_id), message_ids)]
        return np.vstack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)

    @staticmethod
    def _one_by_one(guild: GuildVectors, query: np.ndarray, message_ids: list[int]) -> dict[int, float]:
        return {message_id: float(np.dot(vector, query)) for message_id, vector in _stored(guild, message_ids)}

    def loaded(self, guild_id: int) -> bool:
        """Whether the guild's index is in memory (building it reads every vector: seconds in a large guild)."""
        return guild_id in self._guilds

    def warm(self, guild_id: int) -> asyncio.Task[GuildVectors]:
        """Start building the guild's index in the background (once)."""
        task = self._loading.get(guild_id)
        if task is None:
            task = self._loading[guild_id] = asyncio.create_task(self._load_into(guild_id))
            task.add_done_callback(lambda _: self._loading.pop(guild_id, None))
            task.add_done_callback(read_failure)  # the replies that asked may all have gone
        return task

    async def _load_into(self, guild_id: int) -> GuildVectors:
        while True:
            drops = self._drops.get(guild_id, 0)
            guild = await self._load(guild_id)
            if self._drops.get(guild_id, 0) == drops:  # else read again: it may hold what was deleted meanwhile
                self._guilds[guild_id] = guild
                return guild

    async def _guild(self, guild_id: int) -> GuildVectors:
        guild = self._guilds.get(guild_id)
        if guild is None:
            guild = await asyncio.shield(self.warm(guild_id))
        elif time.monotonic() - guild.synced > SYNC_SECONDS:
            guild.synced = time.monotonic()
            await self._sync(guild_id, guild)
        return guild

    async def _load(self, guild_id: int) -> GuildVectors:
        # Each batch becomes arrays at once: a million row objects held together (~700 B each) were most of the
        # index build's peak, and stayed resident in Python's heap after it.
        parts: list[tuple[np.ndarray, ...]] = []
        cursor = 0
        async with self._sessions() as session:
            while batch := await store.of_guild(session, guild_id, self.model, after=cursor):
                cursor = batch[-1].id
                parts.append(_columns(batch, self.dim))
                del batch
        q, scales, ids, authors, times = (
            (np.concatenate(c) for c in zip(*parts, strict=True)) if parts else _columns([], self.dim)
        )
        del parts
        ids = held(ids)
        vectors = scaled(q, scales)
        del q
        guild = await asyncio.to_thread(self._build, vectors, ids, authors)
        guild.note(ids, authors, times)
        guild.cursor = cursor
        log.debug("vector index of guild %s: %d vectors", guild_id, guild.size)
        return guild

    def _build(self, vectors: np.ndarray, ids: np.ndarray, authors: np.ndarray) -> GuildVectors:
        codec = None
        if len(ids) >= IVF_FROM:
            index, codec = _ivf(self.dim, vectors), _codec(self.dim, vectors)
            trained = len(ids)
        else:
            index, trained = _exact(self.dim), 0
        if len(ids):
            index.add_with_ids(vectors, ids)
        guild = GuildVectors(index, size=len(ids), trained_at=trained, codec=codec)
        if codec is None:
            guild.keep_selectors_of(ids, authors)
        else:
            guild.index_members(vectors, ids, authors)
        return guild

    async def _sync(self, guild_id: int, guild: GuildVectors) -> None:
        """Add what other processes stored since; rebuild when the guild outgrew its index."""
        async with self._sessions() as session:
            rows = await store.of_guild(session, guild_id, self.model, after=guild.cursor)
        if self._guilds.get(guild_id) is not guild:  # built again meanwhile, from SQL: it has them
            return
        if rows:
            self.add(
                guild_id,
                [r.message_id for r in rows],
                dequantize([(r.vector, r.scale) for r in rows], self.dim),
                [r.user_id for r in rows],
                [r.at for r in rows],
            )
            guild.cursor = rows[-1].id
        grown = guild.size >= IVF_FROM and (guild.trained_at == 0 or guild.size >= 4 * guild.trained_at)
        if grown:  # an IVF trained on what is there now, in its place once built: no reply waits for it (seconds)
            self.warm(guild_id)
