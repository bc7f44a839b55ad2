"""The real google-genai client against the stub: structured output, retries, time-outs, the breaker."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.llm.breaker import CircuitBreaker, State
from bot.llm.client import LLM
from bot.llm.gemini import GeminiProvider
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.schemas import ForgetResult, RouteDecision
from bot.llm.types import LLMError, LLMUnavailableError, Prompt
from fakes.gemini_stub import as_json, error, hang, text

PROMPTS = load_prompts()
WHEN = {"today": "Friday 2026-11-20 12:00", "timezone": "UTC"}
CONDENSE = {"subject": "Bob", "existing": "x", "max_chars": 10, **WHEN}
FORGET_VARS = {"subject": "Bob", "existing": "Bob likes tea. Bob is Sergey.", "fact": "Bob likes tea", **WHEN}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def resilient(client, *, attempts=3, timeout=2.0, breaker=None, model="gemini-2.5-flash"):
    gemini = GeminiProvider(client, models={"batch": model, "fast": model}, timeout_s=timeout)
    return ResilientProvider(
        gemini,
        attempts=attempts,
        timeout_s=timeout,
        max_concurrency=4,
        requests_per_minute=1000,
        breaker=breaker or CircuitBreaker(failures=3, cooldown=60),
        wait_initial=0.01,
        wait_max=0.05,
    )


async def test_structured_output_is_parsed_into_the_model(stub, genai_client):
    stub.queue(as_json({"found": True, "memory": "Bob is Sergey."}, tokens_in=42, tokens_out=9))
    llm = LLM(resilient(genai_client), prompts=PROMPTS)
    result = await llm.run("forget", FORGET_VARS, schema=ForgetResult, temperature=0)
    assert result.parsed == ForgetResult(found=True, memory="Bob is Sergey.")
    assert (result.tokens_in, result.tokens_out, result.provider, result.degraded) == (42, 9, "gemini", False)
    sent = stub.requests[0]
    assert sent.api_key == "test-key" and sent.config["responseMimeType"] == "application/json"
    assert sent.config["temperature"] == 0 and "responseSchema" in sent.config
    assert "<forget>Bob likes tea</forget>" in sent.prompt_text


@pytest.mark.parametrize("schema", [RouteDecision, ForgetResult])
async def test_the_schema_made_once_is_sent_as_the_sdk_makes_it_from_the_class(stub, genai_client, schema):
    """The JSON schema is made once per class (the SDK made it afresh on every call): the request must not change."""
    from google.genai import types

    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=schema)
    stub.queue(as_json({"route": "chat"} if schema is RouteDecision else {"found": False, "memory": ""}))
    await genai_client.aio.models.generate_content(model="gemini-2.5-flash", contents="x", config=config)
    from_class = stub.requests[-1].config["responseSchema"]
    gemini = GeminiProvider(genai_client, models={"batch": "gemini-2.5-flash", "fast": "gemini-2.5-flash"}, timeout_s=2)
    for _ in range(2):  # the second time from what the first one made
        stub.queue(as_json({"route": "chat"} if schema is RouteDecision else {"found": False, "memory": ""}))
        await gemini._call("gemini-2.5-flash", Prompt(system="s", user="x"), schema, 0.0)
        assert stub.requests[-1].config["responseSchema"] == from_class


async def test_gemma_gets_the_system_part_folded_in_and_json_parsed_defensively(stub, genai_client):
    stub.queue(text('Sure! ```json\n{"route": "remember", "subject": "me", "fact": "I like tea"}\n```'))
    llm = LLM(resilient(genai_client, model="gemma-3-27b-it"), prompts=PROMPTS)
    variables = {"bot_name": "Elefant", "author": "Ana", "message": "please keep in mind I like tea", **WHEN}
    result = await llm.run("route", variables, schema=RouteDecision)
    assert result.parsed == RouteDecision(route="remember", subject="me", fact="I like tea")
    sent = stub.requests[0]
    assert "systemInstruction" not in sent.body and "responseMimeType" not in sent.config
    assert "request router of Elefant" in sent.prompt_text


async def test_invalid_json_gets_one_repair_retry(stub, genai_client):
    stub.queue(text("I removed it."), as_json({"found": True, "memory": "Bob is Sergey."}))
    llm = LLM(resilient(genai_client, model="gemma-3-27b-it"), prompts=PROMPTS)
    result = await llm.run("forget", FORGET_VARS, schema=ForgetResult)
    assert result.parsed.found and len(stub.requests) == 2
    assert "not valid JSON" in stub.requests[1].prompt_text


async def test_retries_on_429_and_500_then_success(stub, genai_client):
    stub.queue(error(429, retry_delay="0.2s"), error(500), text("Bob is Sergey. Bob likes tea."))
    provider = resilient(genai_client, attempts=3)
    llm = LLM(provider, prompts=PROMPTS)
    started = time.perf_counter()
    result = await llm.run(
        "remember", {"subject": "Bob", "existing": "Bob is Sergey.", "fact": "likes tea", "max_chars": 1500, **WHEN}
    )
    assert result.text == "Bob is Sergey. Bob likes tea." and not result.degraded
    assert len(stub.requests) == 3
    assert time.perf_counter() - started >= 0.2  # the API's retry delay was honoured


async def test_retries_stop_at_the_configured_limit(stub, genai_client):
    stub.queue(*(error(503) for _ in range(10)))
    provider = resilient(genai_client, attempts=3)
    with pytest.raises(LLMError):
        await LLM(provider, prompts=PROMPTS).run("condense", CONDENSE, fallback=False)
    assert len(stub.requests) == 3


async def test_a_client_error_is_not_retried(stub, genai_client):
    stub.queue(error(400), text("never reached"))
    with pytest.raises(LLMError):
        await LLM(resilient(genai_client), prompts=PROMPTS).run(
            "condense", {"subject": "Bob", "existing": "x", "max_chars": 10, **WHEN}, fallback=False
        )
    assert len(stub.requests) == 1


async def test_a_hung_request_times_out_within_the_timeout(stub, genai_client, monkeypatch):
    stub.queue(hang(), hang())
    provider = resilient(genai_client, attempts=2, timeout=0.3)
    attempts = 0
    generate = GeminiProvider.generate

    async def counted(self, call):  # what reaches the stub depends on the machine's speed: count here
        nonlocal attempts
        attempts += 1
        return await generate(self, call)

    monkeypatch.setattr(GeminiProvider, "generate", counted)
    started = time.perf_counter()
    with pytest.raises(LLMError) as raised:
        async with asyncio.timeout(30):  # a hang guard: the stub's replies hang for an hour
            await LLM(provider, prompts=PROMPTS).run(
                "condense", {"subject": "Bob", "existing": "x", "max_chars": 10, **WHEN}, fallback=False
            )
    assert time.perf_counter() - started >= 0.6  # two attempts of 0.3 s each ...
    assert attempts == 2 and "no answer within 0.3 s" in str(raised.value)  # ... each cut off by the time-out


async def test_breaker_opens_after_n_failures_gives_the_fallback_fast_and_closes_after_cooldown(stub, genai_client):
    clock = Clock()
    breaker = CircuitBreaker(failures=3, cooldown=60, clock=clock)
    llm = LLM(resilient(genai_client, attempts=1, breaker=breaker), prompts=PROMPTS)
    variables = {"subject": "Bob", "existing": "Bob is Sergey.", "fact": "Bob likes tea", "max_chars": 1500, **WHEN}
    stub.queue(error(500), error(500), error(500))
    for _ in range(3):
        assert (await llm.run("remember", variables)).degraded
    assert breaker.state is State.OPEN
    result = await llm.run("remember", variables)
    assert result.degraded and result.provider == "offline" and result.text == "Bob is Sergey. Bob likes tea."
    assert len(stub.requests) == 3  # the open breaker sent nothing
    with pytest.raises(LLMUnavailableError):
        await llm.run("remember", variables, fallback=False)
    clock.now += 61
    assert breaker.state is State.HALF_OPEN
    stub.queue(text("Bob is Sergey. Bob likes tea."))
    result = await llm.run("remember", variables)
    assert not result.degraded and breaker.state is State.CLOSED


async def test_a_failed_probe_reopens_the_breaker(stub, genai_client):
    clock = Clock()
    breaker = CircuitBreaker(failures=1, cooldown=10, clock=clock)
    llm = LLM(resilient(genai_client, attempts=1, breaker=breaker), prompts=PROMPTS)
    variables = {"subject": "B", "existing": "x", "max_chars": 10, **WHEN}
    stub.queue(error(500), error(500))
    await llm.run("condense", variables)
    clock.now += 11
    await llm.run("condense", variables)  # the probe fails
    assert breaker.state is State.OPEN


async def test_the_concurrency_cap_holds(stub, genai_client):
    import asyncio

    in_flight = peak = 0
    stub.latency = 0.1
    gemini = GeminiProvider(genai_client, models={"batch": "m", "fast": "m"}, timeout_s=5)
    provider = ResilientProvider(
        gemini,
        attempts=1,
        timeout_s=5,
        max_concurrency=2,
        requests_per_minute=1000,
        breaker=CircuitBreaker(failures=3, cooldown=60),
    )
    original = gemini.generate

    async def counting(call):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(call)
        finally:
            in_flight -= 1

    gemini.generate = counting
    llm = LLM(provider, prompts=PROMPTS)
    await asyncio.gather(*(llm.run("condense", CONDENSE) for _ in range(6)))
    assert peak == 2 and len(stub.requests) == 6
