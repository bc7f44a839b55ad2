"""Text embeddings for optional hybrid recall: Gemini embeddings through google-genai, never required."""

from __future__ import annotations

import asyncio
from typing import Literal, Protocol

from google import genai
from google.genai import types

Task = Literal["RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT"]
BATCH = 100  # texts per request (the API's batch limit)


class Embedder(Protocol):
    """Turns texts into vectors; `model` names them in the cache."""

    model: str

    async def embed(self, texts: list[str], *, task: Task) -> list[list[float]]: ...


class GeminiEmbedder:
    """`models.embed_content` on the shared google-genai client, in batches, with a time-out."""

    def __init__(self, client: genai.Client, model: str, *, dimensions: int, timeout_s: float) -> None:
        self._client = client
        self.model = model
        self.dimensions = dimensions
        self._dimensions = dimensions
        self._timeout_s = timeout_s

    async def embed(self, texts: list[str], *, task: Task) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            response = await asyncio.wait_for(
                self._client.aio.models.embed_content(
                    model=self.model,
                    contents=texts[start : start + BATCH],
                    config=types.EmbedContentConfig(task_type=task, output_dimensionality=self._dimensions),
                ),
                self._timeout_s,
            )
            vectors += [list(e.values or []) for e in response.embeddings or []]
        if len(vectors) != len(texts):
            raise ValueError(f"asked for {len(texts)} embeddings, got {len(vectors)}")
        return vectors
