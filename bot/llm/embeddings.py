"""Text embeddings for optional hybrid recall: Gemini embeddings through google-genai, never required."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Literal, Protocol

from bot.llm.resilience import ResilientProvider
from bot.llm.tokens import estimate_tokens
from bot.llm.types import LLMUnavailableError
from bot.llm.usage import UsageRecorder

if TYPE_CHECKING:  # loaded with a Gemini client (bot/llm/build.py), which this embedder is given
    from google import genai

Task = Literal["RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT"]
BATCH = 100  # texts per request (the API's batch limit)


class Embedder(Protocol):
    """Turns texts into vectors; `model` names them in the cache (vectors of different names never mix)."""

    model: str

    async def embed(self, texts: list[str], *, task: Task) -> list[list[float]]: ...


def cache_name(model: str, dimensions: int) -> str:
    """What stored vectors are keyed by: the model and the dimension (a 256-d and a 768-d vector never compare)."""
    return f"{model}@{dimensions}"


class GeminiEmbedder:
    """`models.embed_content` on the shared google-genai client, in batches.

    With `resilience`, each batch runs on the embedding model's own lane (breaker, limits, retries, time-out)
    like every generate call; with `usage`, each batch leaves an llm_calls row (operation "embed"; the API
    returns no token counts for embeddings, so the input is estimated).
    """

    def __init__(
        self,
        client: genai.Client,
        model: str,
        *,
        dimensions: int,
        timeout_s: float,
        resilience: ResilientProvider | None = None,
        usage: UsageRecorder | None = None,
    ) -> None:
        self._client = client
        self.api_model = model
        self.model = cache_name(model, dimensions)
        self.dimensions = dimensions
        self._dimensions = dimensions
        self._timeout_s = timeout_s
        self._resilience = resilience
        self._usage = usage

    async def embed(self, texts: list[str], *, task: Task) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            vectors += await self._batch(texts[start : start + BATCH], task)
        if len(vectors) != len(texts):
            raise ValueError(f"asked for {len(texts)} embeddings, got {len(vectors)}")
        return vectors

    async def _batch(self, texts: list[str], task: Task) -> list[list[float]]:
        from google.genai import types  # loaded already: the client is the SDK's

        async def once() -> list[list[float]]:
            response = await self._client.aio.models.embed_content(
                model=self.api_model,
                contents=texts,  # type: ignore[arg-type]
                config=types.EmbedContentConfig(
                    task_type=task,
                    output_dimensionality=self._dimensions,
                    http_options=types.HttpOptions(timeout=int(self._timeout_s * 1000)),
                ),
            )
            return [list(e.values or []) for e in response.embeddings or []]

        tokens = sum(estimate_tokens(t) for t in texts)
        started = time.perf_counter()
        outcome = "error"  # also when cancelled
        try:
            if self._resilience is None:
                result = await asyncio.wait_for(once(), self._timeout_s)
            else:
                result = await self._resilience.lane(self.api_model).run("embed", tokens, once)
        except LLMUnavailableError:
            outcome = "skipped"
            raise
        else:
            outcome = "ok"
            return result
        finally:
            if self._usage is not None:
                self._usage.record(
                    operation="embed",
                    role="embed",
                    provider="gemini",
                    model=self.api_model,
                    tokens_in=tokens if outcome == "ok" else 0,
                    tokens_out=0,
                    latency_s=time.perf_counter() - started,
                    outcome=outcome,
                    guild_id=None,
                )
