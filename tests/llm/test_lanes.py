"""Spans bot/llm/build.py, resilience.py and gemini.py: Gemini as it really behaves, through the client `run` builds.

The client is built from settings exactly as `run` builds it (base URL included).

One breaker, limiter and retry policy per model; both HTTP stacks' transport errors retried; the cause logged
once per breaker transition; thinking tokens counted; Gemma detected in any id form; temperatures per family.
"""

from __future__ import annotations

import asyncio
import logging
import socket

import httpx2
import pytest
from google import genai
from google.genai import types

import bot.llm
from bot.llm import build_llm, make_client
from bot.llm.breaker import CircuitBreaker, State
from bot.llm.gemini import GeminiProvider, keeps_default_temperature, lacks_system_and_json
from bot.llm.prompts import load_prompts
from bot.llm.resilience import Limits, ResilientProvider, is_transient
from bot.llm.types import LLMError
from bot.settings import Settings
from fakes.gemini_stub import Reply, StubRequest, error, text

WHEN = {"today": "Friday 2026-11-20 12:00", "timezone": "UTC"}
CONDENSE = {"subject": "Bob", "existing": "Bob is Sergey.", "max_chars": 100, **WHEN}
CHAT = {
    "bot_name": "Elefant",
    **WHEN,
    "author": "Ana",
    "memory": "Ana likes tea.",
    "channel_xml": "",
    "message": "hi",
}


def settings_for(base_url: str, **overrides) -> Settings:
    values = {
        "gemini_api_key": "test-key",
        "gemini_base_url": base_url,
        "model_batch": "gemini-retired",
        "model_fast": "gemma-4-26b-a4b-it",
        "llm_max_attempts": 2,
        "llm_breaker_failures": 5,
        "database_url": "sqlite:///unused.db",
        **overrides,
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def fast_retries(llm) -> None:
    """The same lanes with a short backoff (the policy is the bot's; only the waiting is shortened)."""
    llm.primary._wait = (0.01, 0.05)


async def test_the_client_built_from_settings_reaches_the_base_url(stub):
    # The path `run` takes: bot.llm.types is imported (it used to shadow google.genai.types in bot/llm/__init__).
    assert bot.llm.types.__name__ == "bot.llm.types"
    llm = build_llm(settings_for(stub.base_url), sessions=None)
    try:
        result = await llm.run("condense", CONDENSE, role="batch", fallback=False)
    finally:
        await llm.close()
    assert result.text == "stub answer" and not result.degraded
    assert [r.model for r in stub.requests] == ["gemini-retired"] and stub.requests[0].api_key == "test-key"


async def test_a_failing_batch_model_leaves_chat_on_a_healthy_model_working(stub, caplog):
    def by_model(request: StubRequest) -> Reply:
        if request.model == "gemini-retired":
            return Reply(status=404)
        return text("(fast model) hello Ana")

    stub.responder = by_model
    llm = build_llm(settings_for(stub.base_url), sessions=None)
    fast_retries(llm)
    caplog.set_level(logging.DEBUG, logger="bot.llm")
    try:
        for _ in range(5):
            assert (await llm.run("condense", CONDENSE, role="batch")).degraded
        assert len(stub.requests) == 5  # a 404 is not retried
        for _ in range(3):
            skipped = await llm.run("condense", CONDENSE, role="batch")
            assert skipped.degraded
        assert len(stub.requests) == 5  # the open breaker sent nothing more
        chat = await llm.run("chat", CHAT)
        assert chat.text == "(fast model) hello Ana" and not chat.degraded
        lanes = llm.primary.lanes
        assert lanes["gemini-retired"].breaker.state is State.OPEN
        assert lanes["gemma-4-26b-a4b-it"].breaker.state is State.CLOSED
    finally:
        await llm.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings  # once per transition, not once per failed call
    assert "gemini-retired circuit breaker open" in warnings[0] and "5 failures in a row" in warnings[0]
    assert "404 NOT_FOUND: stub error" in warnings[0]


async def test_members_are_told_the_model_is_failing_not_that_none_is_configured(stub):
    stub.responder = lambda request: error(500)
    llm = build_llm(settings_for(stub.base_url, llm_max_attempts=1), sessions=None)
    try:
        failing = await llm.run("chat", CHAT)
    finally:
        await llm.close()
    assert failing.degraded and failing.text.startswith("The model is failing right now, so I can't chat properly")
    assert failing.text.endswith("What I remember about you: Ana likes tea.")
    unconfigured = await build_llm(Settings(_env_file=None, gemini_api_key=None), sessions=None).run("chat", CHAT)  # type: ignore[call-arg]
    assert unconfigured.text.startswith("I'm running without a language model")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Counting:
    """Counts what the resilience layer sends to the provider (each attempt is one call)."""

    def __init__(self, inner: GeminiProvider) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0
        self.model_for = inner.model_for

    async def generate(self, call):
        self.calls += 1
        return await self.inner.generate(call)


@pytest.mark.parametrize("stack", ["aiohttp", "httpx"])
async def test_refused_connections_are_retried_on_both_http_stacks_without_the_sdks_hidden_sleep(stack, monkeypatch):
    base_url = f"http://127.0.0.1:{closed_port()}"
    if stack == "aiohttp":
        client = make_client(settings_for(base_url))  # google-genai picks aiohttp: discord.py installs it
    else:
        # A transport of its own makes google-genai use its httpx stack (httpx2 in google-genai 3.x).
        client = genai.Client(
            api_key="k",
            http_options=types.HttpOptions(
                base_url=base_url,
                retry_options=types.HttpRetryOptions(attempts=1),
                async_client_args={"transport": httpx2.AsyncHTTPTransport()},
            ),
        )
    counting = Counting(GeminiProvider(client, models={"batch": "m", "fast": "m"}, timeout_s=2))
    provider = ResilientProvider(
        counting,
        attempts=3,
        timeout_s=2,
        max_concurrency=2,
        requests_per_minute=1000,
        breaker=lambda model: CircuitBreaker(failures=5, cooldown=60),
        wait_initial=0.01,
        wait_max=0.02,
    )
    llm = bot.llm.LLM(provider, prompts=load_prompts(), client=client)
    slept: list[float] = []
    sleep = asyncio.sleep

    async def counted(delay: float, *args: object) -> object:
        slept.append(delay)
        return await sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", counted)  # the SDK's retry sleeps through it (1 + 0-9 s)
    try:
        with pytest.raises(LLMError) as raised:
            await llm.run("condense", CONDENSE, fallback=False)
    finally:
        await llm.close()
    cause = raised.value.__cause__
    expected = "ClientConnectorError" if stack == "aiohttp" else "ConnectError"
    assert type(cause).__name__ == expected and is_transient(cause)
    assert counting.calls == 3  # our policy retried it
    assert max(slept, default=0) < 1  # and the SDK did not sleep 1-10 s retrying it itself (ours: 0.01-0.02 s)
    assert expected in provider.lanes["m"].breaker.last_cause


async def test_dropped_connections_are_retried():
    accepted = 0

    async def drop(reader, writer):
        nonlocal accepted
        accepted += 1
        writer.close()  # the connection goes away before any answer: ServerDisconnectedError on aiohttp

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    llm = build_llm(settings_for(f"http://127.0.0.1:{port}", llm_max_attempts=3), sessions=None)
    fast_retries(llm)
    try:
        with pytest.raises(LLMError):
            await llm.run("condense", CONDENSE, fallback=False)
    finally:
        await llm.close()
        server.close()
        await server.wait_closed()
    assert accepted == 3


async def test_thinking_tokens_count_as_output(stub):
    stub.queue(Reply(text="Bob.", tokens_in=40, tokens_out=7, thoughts=120))
    llm = build_llm(settings_for(stub.base_url), sessions=None)
    try:
        result = await llm.run("condense", CONDENSE, role="batch")
    finally:
        await llm.close()
    assert (result.tokens_in, result.tokens_out) == (40, 127)


@pytest.mark.parametrize(
    ("model", "gemma"),
    [
        ("gemma-3-27b-it", True),
        ("models/gemma-3-27b-it", True),
        ("Gemma-4-26B-A4B-it", True),
        ("tunedModels/gemma-ft-123", True),
        ("gemini-3.5-flash-lite", False),
        ("models/gemini-2.5-flash", False),
    ],
)
def test_gemma_is_recognised_in_any_id_form(model, gemma):
    assert lacks_system_and_json(model) is gemma


async def test_a_models_slash_gemma_id_gets_the_system_part_folded_in(stub):
    llm = build_llm(settings_for(stub.base_url, model_fast="models/gemma-3-27b-it"), sessions=None)
    try:
        await llm.run("chat", CHAT)
    finally:
        await llm.close()
    sent = stub.requests[0]
    assert "systemInstruction" not in sent.body and "Elefant" in sent.prompt_text


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("gemini-3.5-flash-lite", None),  # Gemini 3+: Google advises the default (1.0)
        ("gemini-4-hydrogen", None),
        ("gemini-flash-latest", None),
        ("gemini-2.5-flash", 0.0),
        ("gemma-4-26b-a4b-it", 0.0),
    ],
)
async def test_temperature_follows_googles_advice_per_family(stub, model, sent):
    assert keeps_default_temperature(model) is (sent is None)
    llm = build_llm(settings_for(stub.base_url, model_batch=model), sessions=None)
    try:
        await llm.run("condense", CONDENSE, role="batch", temperature=0)
    finally:
        await llm.close()
    assert stub.requests[0].config.get("temperature") == sent


async def test_the_token_limit_holds_per_model(stub):
    client = make_client(settings_for(stub.base_url))
    gemini = GeminiProvider(client, models={"batch": "gemini-big", "fast": "gemma-small"}, timeout_s=5)
    budget = 250  # tokens a "minute": two of these condense prompts (~116 estimated tokens each) fit, four do not
    provider = ResilientProvider(
        gemini,
        attempts=1,
        timeout_s=5,
        max_concurrency=4,
        requests_per_minute=1000,
        breaker=lambda model: CircuitBreaker(failures=5, cooldown=60),
        limits={"fast": Limits(1000, tokens_per_minute=budget)},
        # "Per minute" stretched to an hour: a prompt that waits for room waits ~20 minutes, one that does not
        # never notices the limit, however slow the machine is.
        limit_period=3600.0,
    )
    llm = bot.llm.LLM(provider, prompts=load_prompts(), client=client)
    fast: list[asyncio.Task[object]] = []
    try:
        # The batch model (its own lane, no token limit) sends all four at once (30 s: a hang guard) ...
        batch = (llm.run("condense", CONDENSE, role="batch", fallback=False) for _ in range(4))
        await asyncio.wait_for(asyncio.gather(*batch), 30)
        # ... the fast model sends two, and the 3rd and 4th wait for room.
        fast = [asyncio.create_task(llm.run("condense", CONDENSE, fallback=False)) for _ in range(4)]
        async with asyncio.timeout(30):
            while sum(task.done() for task in fast) < 2:  # noqa: ASYNC110 - polling tasks the test started
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert sum(task.done() for task in fast) == 2
        assert [r.model for r in stub.requests] == ["gemini-big"] * 4 + ["gemma-small"] * 2
    finally:
        for task in fast:
            task.cancel()
        await asyncio.gather(*fast, return_exceptions=True)
        await llm.close()
