"""Spans bot/llm/build.py, resilience.py and openai_compat.py: an OpenAI-compatible endpoint through the client `run`
builds from settings (LLM_PROVIDER=openai), as test_lanes.py does for Gemini.

A model per role, each with its own breaker, limits and retries; refused and dropped connections retried; the
reply deadline's rule for retries; usage rows and metrics as for Gemini.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import select

from bot.app import open_app
from bot.llm import build_llm
from bot.llm.breaker import State
from bot.llm.openai_compat import NO_KEY
from bot.llm.types import LLMError
from bot.reply.deadline import SLOW
from bot.settings import Settings
from db.engine import create_session_factory
from db.models import LlmCall
from fakes.model_doubles import scripted_model
from fakes.openai_stub import ChatRequest, OpenAIStub
from fakes.replies import Reply, error, text
from tests.factories import ALICE, GUILD
from tests.llm.test_lanes import CHAT, CONDENSE, closed_port, fast_retries
from tests.reply.test_deadline import ask, sqlite_url  # noqa: F401 -- a fixture


def settings_for(base_url: str, **overrides) -> Settings:
    values = {
        "llm_provider": "openai",
        "openai_base_url": base_url,
        "openai_model_batch": "qwen3:32b",
        "openai_model_fast": "qwen3:8b",
        "llm_max_attempts": 2,
        "llm_breaker_failures": 5,
        "database_url": "sqlite:///unused.db",
        "embedding_model": "none",
        **overrides,
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


async def test_each_role_reaches_its_model_at_the_base_url_without_a_key(openai_stub):
    llm = build_llm(settings_for(openai_stub.base_url), sessions=None)
    try:
        batch = await llm.run("condense", CONDENSE, role="batch", fallback=False)
        fast = await llm.run("chat", CHAT, fallback=False)
    finally:
        await llm.close()
    assert llm.client.is_closed()  # close() closed the openai client's connections
    assert batch.text == fast.text == "stub answer" and batch.provider == "openai"
    assert [r.model for r in openai_stub.requests] == ["qwen3:32b", "qwen3:8b"]
    assert {r.api_key for r in openai_stub.requests} == {f"Bearer {NO_KEY}"}  # local servers take any key


async def test_the_key_is_sent_when_set_and_batch_defaults_to_the_fast_model(openai_stub):
    settings = settings_for(openai_stub.base_url, openai_api_key="sk-or-123", openai_model_batch=None)
    llm = build_llm(settings, sessions=None)
    try:
        await llm.run("condense", CONDENSE, role="batch", fallback=False)
    finally:
        await llm.close()
    [sent] = openai_stub.requests
    assert sent.model == "qwen3:8b" and sent.api_key == "Bearer sk-or-123"


async def test_a_failing_batch_model_leaves_chat_on_a_healthy_model_working(openai_stub, caplog):
    def by_model(request: ChatRequest) -> Reply:
        return Reply(status=500) if request.model == "qwen3:32b" else text("(fast model) hello Ana")

    openai_stub.responder = by_model
    llm = build_llm(settings_for(openai_stub.base_url, llm_max_attempts=1), sessions=None)
    caplog.set_level(logging.DEBUG, logger="bot.llm")
    try:
        for _ in range(5):
            assert (await llm.run("condense", CONDENSE, role="batch")).degraded
        assert (await llm.run("condense", CONDENSE, role="batch")).degraded
        assert len(openai_stub.requests) == 5  # the open breaker sent nothing more
        chat = await llm.run("chat", CHAT)
        assert chat.text == "(fast model) hello Ana" and not chat.degraded
        lanes = llm.primary.lanes
        assert lanes["qwen3:32b"].breaker.state is State.OPEN and lanes["qwen3:8b"].breaker.state is State.CLOSED
    finally:
        await llm.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        "qwen3:32b circuit breaker open: 500 stub error (5 failures in a row; offline answers for 60 s, then one probe)"
    ]


async def test_members_are_told_the_model_is_failing(openai_stub):
    openai_stub.responder = lambda request: error(500)
    llm = build_llm(settings_for(openai_stub.base_url, llm_max_attempts=1), sessions=None)
    try:
        failing = await llm.run("chat", CHAT)
    finally:
        await llm.close()
    assert failing.degraded and failing.text.startswith("The model is failing right now, so I can't chat properly")


async def test_refused_connections_are_retried_by_our_policy_not_the_sdks():
    llm = build_llm(settings_for(f"http://127.0.0.1:{closed_port()}", llm_max_attempts=3), sessions=None)
    fast_retries(llm)
    tried = 0
    generate = llm.primary.inner.generate

    async def counted(call):
        nonlocal tried
        tried += 1
        return await generate(call)

    llm.primary.inner.generate = counted
    try:
        with pytest.raises(LLMError):
            await llm.run("condense", CONDENSE, fallback=False)
    finally:
        await llm.close()
    assert tried == 3  # ours: LLM_MAX_ATTEMPTS (the SDK's own two retries are off)
    assert "ConnectError" in llm.primary.lanes["qwen3:8b"].breaker.last_cause


async def test_dropped_connections_are_retried():
    accepted = 0

    async def drop(reader, writer):
        nonlocal accepted
        accepted += 1
        writer.close()  # the connection goes away before any answer

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    llm = build_llm(settings_for(f"http://127.0.0.1:{port}/v1", llm_max_attempts=3), sessions=None)
    fast_retries(llm)
    try:
        with pytest.raises(LLMError):
            await llm.run("condense", CONDENSE, fallback=False)
    finally:
        await llm.close()
        server.close()
        await server.wait_closed()
    assert accepted == 3


async def test_the_request_limit_holds_per_model(openai_stub):
    settings = settings_for(openai_stub.base_url, llm_fast_requests_per_minute=2, llm_batch_requests_per_minute=1000)
    llm = build_llm(settings, sessions=None)
    llm.primary._period = 3600.0  # "per minute" stretched to an hour: one that waits for room waits ~30 minutes
    fast: list[asyncio.Task[object]] = []
    try:
        batch = (llm.run("condense", CONDENSE, role="batch", fallback=False) for _ in range(4))
        await asyncio.wait_for(asyncio.gather(*batch), 30)  # a hang guard
        fast = [asyncio.create_task(llm.run("condense", CONDENSE, fallback=False)) for _ in range(4)]
        async with asyncio.timeout(30):
            while sum(task.done() for task in fast) < 2:  # noqa: ASYNC110 - polling tasks the test started
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert sum(task.done() for task in fast) == 2
        assert [r.model for r in openai_stub.requests] == ["qwen3:32b"] * 4 + ["qwen3:8b"] * 2
    finally:
        for task in fast:
            task.cancel()
        await asyncio.gather(*fast, return_exceptions=True)
        await llm.close()


async def test_a_429_whose_retry_after_does_not_fit_the_reply_deadline_falls_back_at_once(sqlite_url):  # noqa: F811
    """Wired as `run` wires it, with the shipped attempts: the router's 429 asks for 20 s, which cannot fit in the
    10 s deadline, so the reply says the model is failing, at once, instead of the deadline's slow answer."""
    stub = await OpenAIStub(responder=lambda request: error(429, headers={"Retry-After": "20"})).start()
    settings = settings_for(stub.base_url, database_url=sqlite_url, llm_max_attempts=4, reply_deadline_seconds=10.0)
    try:
        async with open_app(settings) as app:
            async with asyncio.timeout(8):  # a hang guard, under the deadline: a reply that waited would take 10 s
                answer = await app.responder.respond_within(ask("how are you today?"), deadline=10.0)
            await app.responder.drain(0)
    finally:
        await stub.stop()
    assert SLOW not in answer.text and "The model is failing right now" in answer.text
    assert sum("request router" in r.prompt_text for r in stub.requests) == 1  # asked once, no retry slept


async def test_every_call_leaves_a_usage_row_with_the_provider_and_its_tokens(engine, openai_stub):
    openai_stub.queue(Reply(text="Bob.", tokens_in=120, tokens_out=30, thoughts=5), error(400))
    settings = settings_for(openai_stub.base_url, llm_max_attempts=1)
    sessions = create_session_factory(engine)
    llm = build_llm(settings, sessions=sessions)
    await llm.run("condense", CONDENSE, guild_id=GUILD, role="batch")
    await llm.run("condense", CONDENSE, guild_id=GUILD)  # fails, falls back offline
    await llm.close()
    async with sessions() as session:
        rows = (await session.scalars(select(LlmCall).order_by(LlmCall.id))).all()
    summary = [(r.provider, r.model, r.outcome, r.tokens_in, r.tokens_out) for r in rows]
    assert summary[0] == ("openai", "qwen3:32b", "ok", 120, 35)
    assert summary[1][:3] == ("openai", "", "error") and summary[2][:3] == ("offline", "offline", "fallback")


async def test_stats_and_metrics_count_the_endpoints_calls(settings, openai_stub):
    """/memory-admin stats and /metrics read the same rows and lanes as for Gemini."""
    from bot.metrics.server import serve_metrics
    from bot.reply.routing import Request
    from tests.metrics.scrape import samples, scrape, value

    openai_stub.responder = scripted_model
    settings = settings.model_copy(
        update={
            "metrics_port": 0,
            "embedding_model": None,
            "llm_provider": "openai",
            "openai_base_url": openai_stub.base_url,
            "openai_model_fast": "qwen3:8b",
        }
    )
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is not None
        page = samples((await scrape(server.port, "/metrics"))[1])
        assert value(page, "elefant_model_breaker_state", model="qwen3:8b", state="closed") == 1  # before any call
        answer = await app.responder.respond_within(Request(GUILD, ALICE, "remember that I'm vegetarian"), deadline=30)
        assert "vegetarian" in answer.text
        page = samples((await scrape(server.port, "/metrics"))[1])
        figures = await app.memory.admin.stats(GUILD)
    assert value(page, "elefant_model_calls_total", operation="remember", outcome="ok") == 1
    assert value(page, "elefant_model_tokens_total", operation="remember", direction="in") == 11
    assert figures["llm_calls_24h"] >= 1 and figures["llm_tokens_24h"] >= 18


@pytest.mark.parametrize("excluded", [False, True])
async def test_the_environments_proxy_carries_model_calls_unless_no_proxy_excludes_the_host(monkeypatch, excluded):
    """HTTP(S)_PROXY and NO_PROXY as for Gemini (tests/llm/test_http.py): here the "proxy" is the stub, and the
    endpoint's host does not exist, so only a call through the proxy is answered."""
    proxy = await OpenAIStub().start()
    monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))
    monkeypatch.setenv("NO_PROXY", "openai.invalid" if excluded else "localhost")
    llm = build_llm(settings_for("http://openai.invalid/v1", llm_max_attempts=1), sessions=None)
    try:
        result = await llm.run("condense", CONDENSE, role="batch")
    finally:
        await llm.close()
        await proxy.stop()
    assert result.degraded is excluded  # excluded: the host is looked up directly, fails, and memory answers
    assert len(proxy.requests) == (0 if excluded else 1)
