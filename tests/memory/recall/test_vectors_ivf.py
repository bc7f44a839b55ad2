"""A member's (or a time's) nearest messages in a guild past IVF_FROM are found exactly, not only in the lists the IVF
probes: there the lists nearest the question held few of that member's messages, and a year-old guild lost most
of a member's weeks-old answers (bench.soak, month 12)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bot.memory.recall import vectors
from bot.memory.recall.vectors import VectorIndex

GUILD, DIM, MEMBERS, SIZE = 1, 384, 16, 24_000


def _topics(rng: np.random.Generator) -> np.ndarray:
    """Messages on a few hundred topics (as chat is), unit length: the IVF's lists follow the topics."""
    centres = rng.normal(size=(300, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), SIZE)] + 0.6 * rng.normal(size=(SIZE, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def guild(monkeypatch) -> tuple[VectorIndex, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    monkeypatch.setattr(vectors, "IVF_FROM", 10_000)
    # A filtered search probes 4 × NPROBE of √n lists: 96 of 418 at bench.soak's month 12, 24 of 154 here.
    monkeypatch.setattr(vectors, "NPROBE", 6)
    rng = np.random.default_rng(7)
    data = _topics(rng)
    ids = np.arange(1, SIZE + 1, dtype=np.int64)
    authors = rng.integers(1, MEMBERS + 1, SIZE).astype(np.int64)
    times = np.sort(rng.uniform(0, 365 * 86400, SIZE))
    index = VectorIndex(None, "test", DIM)  # type: ignore[arg-type]  # loaded here, never from SQL
    built = index._build(data, ids, authors)
    built.note(ids, authors, times)
    built.synced = time.monotonic() + 3600
    assert built.trained_at, "the guild is past IVF_FROM: an IVF"
    index._guilds[GUILD] = built
    return index, data, ids, authors, times


def _recall(found: list[tuple[int, float]], truth: np.ndarray) -> float:
    return len({i for i, _ in found} & set(truth.tolist())) / len(truth)


async def test_a_members_nearest_messages_are_all_found_past_ivf_from(guild):
    index, data, ids, authors, _ = guild
    rng = np.random.default_rng(8)
    shares = []
    for member in range(1, MEMBERS + 1):
        query = data[rng.integers(0, SIZE)] + 0.3 * rng.normal(size=DIM).astype(np.float32)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        mine = ids[authors == member]
        truth = mine[np.argsort(-(data[authors == member] @ query))[:50]]
        shares.append(_recall(await index.search(GUILD, query, 50, author=member), truth))
    assert min(shares) >= 0.95, shares  # 8-bit scalars may swap a near tie; the IVF's probed lists found far fewer


async def test_a_times_nearest_messages_are_all_found_past_ivf_from(guild):
    index, data, ids, _, times = guild
    query = data[123]
    month = (times >= 200 * 86400) & (times < 230 * 86400)
    truth = ids[month][np.argsort(-(data[month] @ query))[:50]]
    found = await index.search(GUILD, query, 50, window=(200 * 86400.0, 230 * 86400.0))
    assert _recall(found, truth) >= 0.95
    assert all(200 * 86400 <= times[i - 1] < 230 * 86400 for i, _ in found)


async def test_a_large_share_of_the_guild_stays_on_the_ivf(guild, monkeypatch):
    index, data, _, _, _ = guild
    monkeypatch.setattr(vectors, "EXACT_UP_TO", 100)
    asked = []
    monkeypatch.setattr(VectorIndex, "_exact", classmethod(lambda cls, *a: asked.append(a) or []))
    assert await index.search(GUILD, data[5], 10, author=3)  # ~1,500 of the member's: through the IVF
    assert not asked
