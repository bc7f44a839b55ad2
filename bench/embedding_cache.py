"""The offline MiniLM model's vectors for a benchmark guild's texts, computed once and kept on disk.

A year of a guild is a few hundred thousand messages but only some tens of thousands of distinct texts (chat
repeats itself), and each vector is the model's own for that text. Embedding them once per machine, not once per
database and run, keeps bench.soak within half an hour: what it measures is how memory lives with those vectors,
not how fast this machine runs the model (bench.load measures that). Texts not in the cache (questions, an edit)
go to the real model and are kept too.
"""

from __future__ import annotations

import hashlib
import json
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
        """A cache holding every one of `texts`: what earlier runs embedded (any guild, this model) read from disk,
        the rest embedded now (with a progress bar) and saved beside it."""
        distinct = sorted(set(texts))
        digest = hashlib.sha256("\n".join(distinct).encode()).hexdigest()[:16]
        prefix = f"{MODEL.replace('/', '_')}-"
        model = LocalEmbedder()
        table: dict[str, np.ndarray] = {}
        for saved in sorted(CACHE_DIR.glob(f"{prefix}*.npz")):  # a changed generator re-embeds only what it changed
            with np.load(saved) as stored:
                table.update(zip(json.loads(stored["texts"].tobytes()), stored["vectors"], strict=True))
        missing = [t for t in distinct if t not in table]
        parts = []
        for start in tqdm(
            range(0, len(missing), BATCH), desc="embedding the guild's new texts once", unit="batch", leave=False
        ):
            parts.append(await model.embed_array(missing[start : start + BATCH]))
        if parts:
            vectors = np.vstack(parts).astype(np.float16)
            CACHE_DIR.mkdir(parents=True, exist_ok=True)
            # The texts as JSON bytes: a NumPy string array is as wide as its longest text, for every text.
            texts_json = np.frombuffer(json.dumps(missing).encode(), dtype=np.uint8)
            np.savez(CACHE_DIR / f"{prefix}{name}-{digest}.npz", texts=texts_json, vectors=vectors)
            table.update(zip(missing, vectors, strict=True))
        return cls({t: table[t] for t in distinct}, model)

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
