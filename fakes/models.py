"""The model stack tests and benchmarks run on: the production LLM client, offline, against the Gemini stub or
against the OpenAI-compatible stub."""

from __future__ import annotations

from typing import Any, Literal

import openai
from google import genai
from google.genai import types

from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.gemini import GeminiProvider
from bot.llm.openai_compat import OpenAIProvider
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.types import Provider
from bot.llm.usage import UsageRecorder
from fakes.model_doubles import RefuseOffline

Api = Literal["gemini", "openai"]
MODELS: dict[Api, dict[str, str]] = {
    "gemini": {"batch": "gemini-2.5-flash", "fast": "gemma-3-27b-it"},
    "openai": {"batch": "stub-batch", "fast": "stub-model"},
}


def stub_client(base_url: str, *, api_key: str = "test-key") -> genai.Client:
    """The real google-genai client pointed at a GeminiStub's `base_url`."""
    return genai.Client(api_key=api_key, http_options=types.HttpOptions(base_url=base_url))


def openai_stub_client(base_url: str, *, api_key: str = "test-key", timeout_s: float = 10) -> openai.AsyncOpenAI:
    """The real `openai` client pointed at an OpenAIStub's `base_url`, without the SDK's own retries (as built)."""
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s)


def model_stack(
    base_url: str | None = None,
    *,
    api: Api = "gemini",
    attempts: int = 1,
    timeout_s: float = 10,
    concurrency: int = 8,
    requests_per_minute: int = 100_000,
    breaker_failures: int = 1000,
    wait: tuple[float, float] = (0.01, 0.02),
    fast_model: str | None = None,
    offline: Provider | None = None,
    usage: UsageRecorder | None = None,
) -> LLM:
    """The LLM as `bot.llm.build` wires it: offline alone without a stub (`base_url` None), else lanes, retries
    and a breaker around the real client of `api` pointed at the stub, whose close() closes that client.

    The defaults are limits that do not bind and waits of milliseconds; `offline` defaults to a provider that
    refuses, so a test sees the model's failure instead of a silent offline answer.
    """
    if base_url is None:
        return LLM(None, prompts=load_prompts(), usage=usage)
    models: Any = {**MODELS[api], **({"fast": fast_model} if fast_model else {})}
    client: Any
    inner: Provider
    if api == "openai":
        client = openai_stub_client(base_url, timeout_s=timeout_s)
        inner = OpenAIProvider(client, models=models)
    else:
        client = stub_client(base_url)
        inner = GeminiProvider(client, models=models, timeout_s=timeout_s)
    provider = ResilientProvider(
        inner,
        attempts=attempts,
        timeout_s=timeout_s,
        max_concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        breaker=CircuitBreaker(failures=breaker_failures, cooldown=60),
        wait_initial=wait[0],
        wait_max=wait[1],
    )
    return LLM(provider, prompts=load_prompts(), usage=usage, offline=offline or RefuseOffline(), client=client)
