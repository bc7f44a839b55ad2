"""The model stack tests and benchmarks run on: the production LLM client, offline or against the Gemini stub."""

from __future__ import annotations

from google import genai
from google.genai import types

from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.gemini import GeminiProvider
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.types import Provider
from bot.llm.usage import UsageRecorder
from fakes.model_doubles import RefuseOffline


def stub_client(base_url: str, *, api_key: str = "test-key") -> genai.Client:
    """The real google-genai client pointed at a GeminiStub's `base_url`."""
    return genai.Client(api_key=api_key, http_options=types.HttpOptions(base_url=base_url))


def model_stack(
    base_url: str | None = None,
    *,
    attempts: int = 1,
    timeout_s: float = 10,
    concurrency: int = 8,
    requests_per_minute: int = 100_000,
    breaker_failures: int = 1000,
    wait: tuple[float, float] = (0.01, 0.02),
    fast_model: str = "gemma-3-27b-it",
    offline: Provider | None = None,
    usage: UsageRecorder | None = None,
) -> LLM:
    """The LLM as `bot.llm.build` wires it: offline alone without a stub (`base_url` None), else lanes, retries
    and a breaker around the real client pointed at the stub, whose close() closes that client.

    The defaults are limits that do not bind and waits of milliseconds; `offline` defaults to a provider that
    refuses, so a test sees the model's failure instead of a silent offline answer.
    """
    if base_url is None:
        return LLM(None, prompts=load_prompts(), usage=usage)
    client = stub_client(base_url)
    provider = ResilientProvider(
        GeminiProvider(client, models={"batch": "gemini-2.5-flash", "fast": fast_model}, timeout_s=timeout_s),
        attempts=attempts,
        timeout_s=timeout_s,
        max_concurrency=concurrency,
        requests_per_minute=requests_per_minute,
        breaker=CircuitBreaker(failures=breaker_failures, cooldown=60),
        wait_initial=wait[0],
        wait_max=wait[1],
    )
    return LLM(provider, prompts=load_prompts(), usage=usage, offline=offline or RefuseOffline(), client=client)
