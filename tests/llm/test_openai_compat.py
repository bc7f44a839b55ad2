"""The real `openai` client against the OpenAI-compatible stub: structured output as servers support it, thinking
models, refusals, tokens, retries (Retry-After), time-outs, the breaker and the concurrency cap."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from bot.llm.breaker import CircuitBreaker, State
from bot.llm.client import LLM
from bot.llm.openai_compat import OpenAIProvider
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.schemas import ForgetResult, RouteDecision
from bot.llm.types import LLMError, LLMUnavailableError
from fakes.openai_stub import OpenAIStub
from fakes.replies import Reply, as_json, error, hang, text
from tests.llm.test_gemini import CONDENSE, FORGET_VARS, WHEN, Clock

PROMPTS = load_prompts()
ROUTE_VARS = {"bot_name": "Elefant", "author": "Ana", "message": "please keep in mind I like tea", **WHEN}
REMEMBER_VARS = {"subject": "Bob", "existing": "Bob is Sergey.", "fact": "likes tea", "max_chars": 1500, **WHEN}
CHAT_VARS = {
    "bot_name": "Elefant",
    "author": "Ana",
    "memory": "Ana likes tea.",
    "channel_xml": "",
    "message": "hi",
    **WHEN,
}


@pytest.fixture
async def client(openai_stub: OpenAIStub):
    from fakes.models import openai_stub_client

    made = openai_stub_client(openai_stub.base_url)
    yield made
    await made.close()


def resilient(client, *, attempts=3, timeout=2.0, breaker=None, model="qwen3:8b", concurrency=4):
    provider = OpenAIProvider(client, models={"batch": model, "fast": model})
    return ResilientProvider(
        provider,
        attempts=attempts,
        timeout_s=timeout,
        max_concurrency=concurrency,
        requests_per_minute=1000,
        breaker=breaker or CircuitBreaker(failures=3, cooldown=60),
        wait_initial=0.01,
        wait_max=0.05,
    )


async def test_structured_output_is_asked_as_a_strict_json_schema_and_parsed(openai_stub, client):
    openai_stub.queue(as_json({"found": True, "memory": "Bob is Sergey."}, tokens_in=42, tokens_out=9))
    result = await LLM(resilient(client), prompts=PROMPTS).run(
        "forget", FORGET_VARS, schema=ForgetResult, temperature=0
    )
    assert result.parsed == ForgetResult(found=True, memory="Bob is Sergey.")
    assert (result.tokens_in, result.tokens_out, result.provider, result.degraded) == (42, 9, "openai", False)
    [sent] = openai_stub.requests
    assert sent.model == "qwen3:8b" and sent.api_key == "Bearer test-key"
    assert sent.body["temperature"] == 0 and sent.body["stream"] is False  # streaming off, said so
    fmt = sent.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "ForgetResult"
    assert fmt["json_schema"]["strict"] is True and fmt["json_schema"]["schema"]["additionalProperties"] is False
    [system, user] = sent.body["messages"]
    assert system["role"] == "system" and "<forget>Bob likes tea</forget>" in user["content"]


async def test_optional_fields_are_required_and_nullable_in_the_strict_schema(openai_stub, client):
    """OpenAI's strict mode refuses a schema whose properties are not all required; a null answer still parses."""
    openai_stub.queue(as_json({"route": "chat", "subject": None, "fact": None}))
    result = await LLM(resilient(client), prompts=PROMPTS).run("route", ROUTE_VARS, schema=RouteDecision)
    assert result.parsed == RouteDecision(route="chat")
    schema = openai_stub.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["route", "subject", "fact"]


async def test_a_server_without_json_schemas_is_asked_in_json_mode_with_the_schema_in_the_instructions(
    openai_stub, client, caplog
):
    openai_stub.formats = frozenset({"json_object"})
    openai_stub.responder = lambda request: as_json({"route": "remember", "subject": "me", "fact": "I like tea"})
    provider = resilient(client)
    llm = LLM(provider, prompts=PROMPTS)
    first = await llm.run("route", ROUTE_VARS, schema=RouteDecision, fallback=False)
    second = await llm.run("route", ROUTE_VARS, schema=RouteDecision, fallback=False)
    assert first.parsed == second.parsed == RouteDecision(route="remember", subject="me", fact="I like tea")
    # The refused schema is not in the stub's record (it answered 400 first); JSON mode is remembered for the model.
    assert [r.format_type for r in openai_stub.requests] == ["json_object", "json_object"]
    system = openai_stub.requests[0].body["messages"][0]["content"]
    assert "Answer with only a JSON object matching this JSON schema" in system and '"route"' in system
    assert provider.inner.json_mode == {"qwen3:8b"}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "qwen3:8b refused a JSON schema (400 response_format type" in warnings[0]


async def test_a_json_mode_reply_that_does_not_match_the_schema_gets_one_repair_call(openai_stub, client):
    openai_stub.formats = frozenset({"json_object"})
    openai_stub.queue(as_json({"removed": "tea"}), as_json({"found": True, "memory": "Bob is Sergey."}))
    result = await LLM(resilient(client), prompts=PROMPTS).run("forget", FORGET_VARS, schema=ForgetResult)
    assert result.parsed == ForgetResult(found=True, memory="Bob is Sergey.") and not result.degraded
    assert len(openai_stub.requests) == 2 and "not valid JSON" in openai_stub.requests[1].prompt_text
    assert result.tokens_in == 22  # both calls counted


async def test_json_in_chatter_or_code_fences_is_read_without_a_repair(openai_stub, client):
    openai_stub.queue(text('Sure!\n```json\n{"route": "about", "subject": "me"}\n```'))
    result = await LLM(resilient(client), prompts=PROMPTS).run("route", ROUTE_VARS, schema=RouteDecision)
    assert result.parsed == RouteDecision(route="about", subject="me") and len(openai_stub.requests) == 1


async def test_a_reply_still_not_json_after_the_repair_falls_back_offline(openai_stub, client):
    openai_stub.queue(text("I removed it."), text("Done!"))
    llm = LLM(resilient(client), prompts=PROMPTS)
    with pytest.raises(LLMError, match="did not return valid JSON for forget"):
        await llm.run("forget", FORGET_VARS, schema=ForgetResult, fallback=False)
    assert len(openai_stub.requests) == 2  # one repair, no retries of an invalid answer


async def test_a_server_taking_neither_format_fails_the_call_without_retries(openai_stub, client):
    openai_stub.formats = frozenset()
    provider = resilient(client)
    with pytest.raises(LLMError) as raised:
        await LLM(provider, prompts=PROMPTS).run("route", ROUTE_VARS, schema=RouteDecision, fallback=False)
    assert "400 response_format type 'json_object' is not supported" in str(raised.value)
    assert provider.inner.json_mode == set()  # not remembered: JSON mode never worked


@pytest.mark.parametrize("where", ["reasoning_content", "reasoning"])
async def test_a_reasoning_field_is_never_the_answer(openai_stub, client, where):
    openai_stub.reasoning = where
    openai_stub.queue(
        text("Bob is Sergey. Bob likes tea.", reasoning="Bob already has a fact; append the new one."),
        as_json({"route": "chat"}, reasoning='I could answer {"route": "remember"} but it is chat.'),
    )
    llm = LLM(resilient(client), prompts=PROMPTS)
    remembered = await llm.run("remember", REMEMBER_VARS)
    routed = await llm.run("route", ROUTE_VARS, schema=RouteDecision)
    assert remembered.text == "Bob is Sergey. Bob likes tea."
    assert routed.parsed == RouteDecision(route="chat")


@pytest.mark.parametrize(
    "content",
    [
        "<think>\nBob has one fact.\n</think>\n\nBob is Sergey. Bob likes tea.",
        "Bob has one fact, so I append.\n</think>\nBob is Sergey. Bob likes tea.",  # the template opened the block
        "<thinking>hmm</thinking>Bob is Sergey. Bob likes tea.",
    ],
)
async def test_think_blocks_are_left_out_of_the_answer(openai_stub, client, content):
    openai_stub.queue(text(content))
    result = await LLM(resilient(client), prompts=PROMPTS).run("remember", REMEMBER_VARS)
    assert result.text == "Bob is Sergey. Bob likes tea."


async def test_think_blocks_before_json_mode_answers_are_left_out(openai_stub, client):
    openai_stub.formats = frozenset({"json_object"})
    openai_stub.reasoning = "think"
    openai_stub.queue(as_json({"route": "recall"}))
    result = await LLM(resilient(client), prompts=PROMPTS).run("route", ROUTE_VARS, schema=RouteDecision)
    assert result.parsed == RouteDecision(route="recall") and len(openai_stub.requests) == 1


async def test_a_model_that_only_thought_has_no_answer(openai_stub, client):
    openai_stub.queue(Reply(text="", reasoning="Let me consider every fact about Bob at length…"))
    openai_stub.queue(text("<think>Let me consider every fact about Bob at length, first the"))  # cut off
    llm = LLM(resilient(client, attempts=1), prompts=PROMPTS)
    with pytest.raises(LLMError, match=r"returned no answer for remember \(only its reasoning"):
        await llm.run("remember", REMEMBER_VARS, fallback=False)
    with pytest.raises(LLMError, match="returned no answer for remember"):
        await llm.run("remember", REMEMBER_VARS, fallback=False)


async def test_reasoning_tokens_count_as_output(openai_stub, client):
    openai_stub.queue(Reply(text="Bob.", tokens_in=40, tokens_out=7, thoughts=120))
    result = await LLM(resilient(client), prompts=PROMPTS).run("condense", CONDENSE)
    assert (result.tokens_in, result.tokens_out) == (40, 127)


async def test_a_server_that_does_not_count_tokens_gets_them_estimated(openai_stub, client):
    openai_stub.counts_tokens = False
    openai_stub.queue(text("Bob is Sergey."))
    result = await LLM(resilient(client), prompts=PROMPTS).run("condense", CONDENSE)
    assert result.tokens_in > 20 and result.tokens_out == 4  # ~4 characters a token, as budgets estimate


async def test_a_content_filter_is_a_refusal_not_a_failure(openai_stub, client):
    openai_stub.queue(Reply(blocked=True))
    result = await LLM(resilient(client), prompts=PROMPTS).run("chat", CHAT_VARS, fallback=False)
    assert result.refused and result.text == "" and not result.degraded


async def test_retries_on_429_honouring_retry_after_and_500_then_success(openai_stub, client):
    openai_stub.queue(error(429, headers={"Retry-After": "1"}), error(500), text("Bob is Sergey. Bob likes tea."))
    started = time.perf_counter()
    result = await LLM(resilient(client, attempts=3), prompts=PROMPTS).run("remember", REMEMBER_VARS)
    assert result.text == "Bob is Sergey. Bob likes tea." and not result.degraded
    assert len(openai_stub.requests) == 3
    assert time.perf_counter() - started >= 1.0  # Retry-After was honoured (our own waits are 10-50 ms)


async def test_retry_after_ms_is_honoured_too(openai_stub, client):
    openai_stub.queue(error(429, headers={"retry-after-ms": "400"}), text("Bob."))
    started = time.perf_counter()
    await LLM(resilient(client, attempts=2), prompts=PROMPTS).run("condense", CONDENSE, fallback=False)
    assert time.perf_counter() - started >= 0.4


async def test_retries_stop_at_the_configured_limit(openai_stub, client):
    openai_stub.queue(*(error(503) for _ in range(10)))
    with pytest.raises(LLMError, match="503 stub error"):
        await LLM(resilient(client, attempts=3), prompts=PROMPTS).run("condense", CONDENSE, fallback=False)
    assert len(openai_stub.requests) == 3


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_a_client_error_is_not_retried(openai_stub, client, status):
    openai_stub.queue(error(status), text("never reached"))
    with pytest.raises(LLMError):
        await LLM(resilient(client), prompts=PROMPTS).run("condense", CONDENSE, fallback=False)
    assert len(openai_stub.requests) == 1


async def test_a_hung_request_times_out_within_the_timeout(openai_stub, client, monkeypatch):
    openai_stub.queue(hang(), hang())
    provider = resilient(client, attempts=2, timeout=0.3)
    attempts = 0
    generate = OpenAIProvider.generate

    async def counted(self, call):  # what reaches the stub depends on the machine's speed: count here
        nonlocal attempts
        attempts += 1
        return await generate(self, call)

    monkeypatch.setattr(OpenAIProvider, "generate", counted)
    started = time.perf_counter()
    with pytest.raises(LLMError) as raised:
        async with asyncio.timeout(30):  # a hang guard: the stub's replies hang for an hour
            await LLM(provider, prompts=PROMPTS).run("condense", CONDENSE, fallback=False)
    assert time.perf_counter() - started >= 0.6  # two attempts of 0.3 s each ...
    assert attempts == 2 and "no answer within 0.3 s" in str(raised.value)  # ... each cut off by the time-out


async def test_the_sdks_own_time_out_is_a_time_out_retried_like_ours(openai_stub):
    """The client's time-out (LLM_TIMEOUT_SECONDS too) may fire before ours: a time-out, retried, said as one."""
    from fakes.models import openai_stub_client

    client = openai_stub_client(openai_stub.base_url, timeout_s=0.2)
    openai_stub.queue(hang(), text("Bob."), hang(), hang())
    llm = LLM(resilient(client, attempts=2, timeout=5), prompts=PROMPTS)
    try:
        result = await llm.run("condense", CONDENSE)
        with pytest.raises(LLMError) as raised:
            await llm.run("condense", CONDENSE, fallback=False)
    finally:
        await client.close()
    assert result.text == "Bob." and not result.degraded
    assert "no answer within" in str(raised.value)


async def test_breaker_opens_after_n_failures_gives_the_fallback_fast_and_closes_after_cooldown(openai_stub, client):
    clock = Clock()
    breaker = CircuitBreaker(failures=3, cooldown=60, clock=clock)
    llm = LLM(resilient(client, attempts=1, breaker=breaker), prompts=PROMPTS)
    variables = {**REMEMBER_VARS, "fact": "Bob likes tea"}
    openai_stub.queue(error(500), error(500), error(500))
    for _ in range(3):
        assert (await llm.run("remember", variables)).degraded
    assert breaker.state is State.OPEN
    result = await llm.run("remember", variables)
    assert result.degraded and result.provider == "offline" and result.text == "Bob is Sergey. Bob likes tea."
    assert len(openai_stub.requests) == 3  # the open breaker sent nothing
    with pytest.raises(LLMUnavailableError):
        await llm.run("remember", variables, fallback=False)
    clock.now += 61
    openai_stub.queue(text("Bob is Sergey. Bob likes tea."))
    assert not (await llm.run("remember", variables)).degraded and breaker.state is State.CLOSED


async def test_the_concurrency_cap_holds(openai_stub, client):
    in_flight = peak = 0
    openai_stub.latency = 0.1
    provider = resilient(client, concurrency=2)
    original = provider.inner.generate

    async def counting(call):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(call)
        finally:
            in_flight -= 1

    provider.inner.generate = counting
    await asyncio.gather(*(LLM(provider, prompts=PROMPTS).run("condense", CONDENSE) for _ in range(6)))
    assert peak == 2 and len(openai_stub.requests) == 6


def test_the_json_instructions_carry_the_pydantic_schema():
    from bot.llm.structured import json_instructions

    assert json.dumps(RouteDecision.model_json_schema()) in json_instructions(RouteDecision)
