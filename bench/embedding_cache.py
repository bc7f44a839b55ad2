"""The offline MiniLM model's vectors for a benchmark guild's texts, computed once and kept on disk.

A year of a guild is a few hundred thousand messages but only some tens of thousands of distinct texts (chat
repeats itself), and each vector is the model's own for that text. Embedding them once per machine, not once per
database and run, keeps bench.soak within half an hour: what it measures is how memory lives with those vectors,
not how fast this machine runs the model (bench.load measures that). Texts not in the cache (questions, an edit)
go to the real model and are kept too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bot.llm.local_embedder import DIMENSIONS, MODEL, LocalEmbedder

CACHE_DIR = Path.home() / ".cache" / "elefant-bench"
BATCH = 256


class CachedEmbedder:
    """The Embedder protocol over a text -> vector table, the real model behind it for what the table lacks."""

    model = MODEL
    dimensions = DIMENSIONS
    local = False  # documents cost a look-up here, not the event loop's CPU

    def __init__(self, table: dict[str, np.ndarray], model: LocalEmbedder) -> None:
        self._table = table
        self._model = model
        self.missed = 0

    @classmethod
    async def for_texts(cls, texts: Iterable[str], *, name: str) -> CachedEmbedder:
        """A cache holding every one of `texts`: read from disk, or embedded now (with a progress bar) and saved."""
        distinct = sorted(set(texts))
        digest = hashlib.sha256("\n".join(distinct).encode()).hexdigest()[:16]
        path = CACHE_DIR / f"{name}-{MODEL.replace('/', '_')}-{digest}.npy"
        model = LocalEmbedder()
        if path.exists():
            vectors = np.load(path)
        else:
            parts = []
            for start in tqdm(
                range(0, len(distinct), BATCH), desc="embedding the guild's texts once", unit="batch", leave=False
            ):
                parts.append(await model.embed_array(distinct[start : start + BATCH]))
            vectors = np.vstack(parts).astype(np.float16) if parts else np.zeros((0, DIMENSIONS), np.float16)
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, vectors)
        return cls(dict(zip(distinct, vectors, strict=True)), model)

    def warm(self) -> None:
        self._model.warm()

    async def loaded(self) -> bool:
        return await self._model.loaded()

    async def embed(self, texts: list[str], *, task: str = "RETRIEVAL_DOCUMENT") -> list[list[float]]:
        return (await self.embed_array(texts, task=task)).tolist()

    async def embed_array(self, texts: list[str], *, task: str = "RETRIEVAL_DOCUMENT") -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._table]
        if missing:
            self.missed += len(missing)
            await self._model.loaded()
            for text, vector in zip(missing, await self._model.embed_array(missing, task=task), strict=True):
                self._table[text] = vector.astype(np.float16)
        return np.vstack([self._table[t] for t in texts]).astype(np.float32)

    def close(self) -> None:
        self._model.close()
