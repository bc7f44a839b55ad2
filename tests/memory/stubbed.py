"""MemoryManagers on the real google-genai client against the Gemini stub (tests and their child processes)."""

from __future__ import annotations

from google import genai
from google.genai import types

from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.gemini import GeminiProvider
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.types import Provider
from fakes.model_doubles import RefuseOffline


def stub_llm(
    base_url: str, *, breaker_failures: int = 1000, concurrency: int = 8, offline: Provider | None = None
) -> LLM:
    """The production client stack (lanes, retries off) pointed at the stub; no silent offline fallback."""
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=base_url))
    provider = ResilientProvider(
        GeminiProvider(client, models={"batch": "gemini-2.5-flash", "fast": "gemma-3-27b-it"}, timeout_s=10),
        attempts=1,
        timeout_s=10,
        max_concurrency=concurrency,
        requests_per_minute=100_000,
        breaker=CircuitBreaker(failures=breaker_failures, cooldown=60),
        wait_initial=0.01,
        wait_max=0.02,
    )
    return LLM(provider, prompts=load_prompts(), offline=offline or RefuseOffline(), client=client)
