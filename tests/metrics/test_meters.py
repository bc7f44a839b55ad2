"""bot/metrics/meters.py: the breaker state per model and failed model calls, with the real client against the stub."""

from __future__ import annotations

from pydantic import SecretStr

from bot.app import open_app
from bot.metrics.server import serve_metrics
from bot.reply.routing import Request
from fakes.gemini_stub import GeminiStub, error
from tests.factories import ALICE, GUILD
from tests.metrics.scrape import samples, scrape, value


async def test_a_failing_model_shows_its_breaker_open_and_its_calls_as_fallbacks(settings):
    stub = await GeminiStub(responder=lambda _request: error(500)).start()
    try:
        settings = settings.model_copy(
            update={
                "metrics_port": 0,
                "embedding_model": None,
                "gemini_api_key": SecretStr("key"),
                "gemini_base_url": stub.base_url,
                "llm_max_attempts": 1,
                "llm_breaker_failures": 1,
            }
        )
        async with open_app(settings) as app, serve_metrics(settings, app) as server:
            assert server is not None
            page = samples((await scrape(server.port, "/metrics"))[1])
            for model in (settings.model_batch, settings.model_fast):  # closed before any call
                assert value(page, "elefant_model_breaker_state", model=model, state="closed") == 1
                assert value(page, "elefant_model_breaker_state", model=model, state="open") == 0

            answer = await app.responder.respond_within(
                Request(GUILD, ALICE, "remember that I'm vegetarian"), deadline=30
            )
            assert "vegetarian" in answer.text  # the offline model answered instead
            page = samples((await scrape(server.port, "/metrics"))[1])
    finally:
        await stub.stop()
    [failed] = {request.model for request in stub.requests}
    assert value(page, "elefant_model_breaker_state", model=failed, state="open") == 1
    assert value(page, "elefant_model_breaker_state", model=failed, state="closed") == 0
    assert value(page, "elefant_model_calls_total", operation="remember", outcome="fallback") == 1
