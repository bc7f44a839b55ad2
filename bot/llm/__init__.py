"""The LLM layer: providers (Gemini, offline), prompts as files, resilience, usage accounting."""

from __future__ import annotations

from google import genai
from google.genai import types
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.embeddings import GeminiEmbedder
from bot.llm.gemini import GeminiProvider
from bot.llm.local_embedder import LocalEmbedder, installed, load_minilm
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.usage import UsageRecorder
from bot.settings import Settings

__all__ = ["LLM", "build_embedder", "build_llm"]


def build_embedder(settings: Settings, llm: LLM) -> GeminiEmbedder | LocalEmbedder | None:
    """EMBEDDING_MODEL: "local" (the default: MiniLM on the CPU, no key), a Gemini embedding model (with a key),
    or "none"; None also when the local model is not installed (recall then uses words only)."""
    model = (settings.embedding_model or "none").strip()
    if model.lower() in {"none", "off", ""}:
        return None
    if model.lower() == "local":
        if installed():
            return LocalEmbedder()  # loaded on first use: commands that never embed never pay for it
        load_minilm()  # says why there are no vectors, once
        return None
    if llm.client is None:
        return None
    return GeminiEmbedder(
        llm.client,
        settings.embedding_model,
        dimensions=settings.embedding_dimensions,
        timeout_s=settings.llm_timeout_seconds,
    )


def build_llm(settings: Settings, *, sessions: async_sessionmaker[AsyncSession] | None) -> LLM:
    """The resilient Gemini provider with the offline fallback, or the offline provider alone without a key."""
    prompts = load_prompts()
    usage = UsageRecorder(sessions) if sessions is not None else None
    if settings.gemini_api_key is None:
        return LLM(None, prompts=prompts, usage=usage)
    options = types.HttpOptions(base_url=settings.gemini_base_url) if settings.gemini_base_url else None
    client = genai.Client(api_key=settings.gemini_api_key.get_secret_value(), http_options=options)
    gemini = GeminiProvider(
        client,
        models={"batch": settings.model_batch, "fast": settings.model_fast},
        timeout_s=settings.llm_timeout_seconds,
    )
    primary = ResilientProvider(
        gemini,
        attempts=settings.llm_max_attempts,
        timeout_s=settings.llm_timeout_seconds,
        max_concurrency=settings.llm_max_concurrency,
        requests_per_minute=settings.llm_requests_per_minute,
        breaker=CircuitBreaker(failures=settings.llm_breaker_failures, cooldown=settings.llm_breaker_cooldown_seconds),
    )
    return LLM(primary, prompts=prompts, usage=usage, client=client)
