"""/healthz and /metrics of bot/metrics/server.py, scraped over HTTP from the app as `run` and the console start it
(spans meters.py and health.py on purpose: they are exercised through the server, as Prometheus sees them)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from bot.app import open_app
from bot.metrics.server import serve_metrics
from bot.reply.routing import Request
from bot.settings import ConfigError, Settings
from tests.factories import ALICE, GUILD, message
from tests.metrics.scrape import names, samples, scrape, value
from tests.test_stops import environment, start, wait_for_line

EVERY_ENDPOINT_METRIC = {
    "elefant_ingest_queue_depth",
    "elefant_ingest_spilled",
    "elefant_ingest_accepted_total",
    "elefant_ingest_written_total",
    "elefant_ingest_overflowed_total",
    "elefant_ingest_dead_letters_total",
    "elefant_reply_seconds_count",
    "elefant_reply_deadline_misses_total",
    "elefant_recall_seconds_count",
    "elefant_change_feed_lag_seconds",
}


def _served(settings: Settings) -> Settings:
    return settings.model_copy(update={"metrics_port": 0, "embedding_model": None})


async def test_metrics_are_off_by_default(settings):
    assert settings.metrics_port is None
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is None


async def test_replies_model_calls_and_recall_are_counted(settings):
    settings = _served(settings)
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is not None
        status, text = await scrape(server.port, "/metrics")
        assert status == 200
        before = samples(text)
        assert names(before) >= EVERY_ENDPOINT_METRIC
        assert value(before, "elefant_reply_seconds_count", route="remember") == 0

        await app.memory.intake.message(message("I like green tea", author=ALICE, name="Ana"))
        answer = await app.responder.respond_within(Request(GUILD, ALICE, "remember that I'm vegetarian"), deadline=30)
        assert answer.route.value == "remember"
        await app.memory.flush()
        await app.memory.recollection.recall(GUILD, "green tea")
        # A deadline no answer can meet: answered from memory, counted as a miss.
        await app.responder.respond_within(Request(GUILD, ALICE, "remember that I cycle"), deadline=0.001)

        after = samples((await scrape(server.port, "/metrics"))[1])
    # The late reply's route is what was known when the deadline passed: "remember" if routing was done (the change
    # then finishes in the background, and its model call with it), else the fallback's.
    replies = [v for (name, _), v in after.items() if name == "elefant_reply_seconds_count"]
    assert sum(replies) == 2 and value(after, "elefant_reply_seconds_count", route="remember") >= 1
    assert (value(after, "elefant_model_calls_total", operation="remember", outcome="ok") or 0) >= 1
    assert (value(after, "elefant_model_tokens_total", operation="remember", direction="in") or 0) > 0
    assert value(after, "elefant_recall_seconds_count") == 1
    misses = [v for (name, _), v in after.items() if name == "elefant_reply_deadline_misses_total"]
    assert sum(misses) == 1
    assert value(after, "elefant_ingest_written_total") == value(after, "elefant_ingest_accepted_total") >= 1
    assert value(after, "elefant_ingest_queue_depth") == 0
    assert 0 <= (value(after, "elefant_change_feed_lag_seconds") or -1) < 30


async def test_healthz_is_503_while_the_gateway_is_down(settings):
    settings = _served(settings)
    connected = False
    async with open_app(settings) as app, serve_metrics(settings, app, gateway=lambda: connected) as server:
        assert server is not None
        status, body = await scrape(server.port, "/healthz")
        assert status == 503
        assert '"gateway": "disconnected"' in body and '"storage": "ok"' in body
        connected = True
        status, body = await scrape(server.port, "/healthz")
        assert status == 200, body


async def test_healthz_is_503_while_storage_is_away(private_postgres, tmp_path):
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=private_postgres.url,
        data_dir=tmp_path,
        metrics_port=0,
        embedding_model=None,
        ingest_shutdown_seconds=1,
    )
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is not None
        assert (await scrape(server.port, "/healthz"))[0] == 200
        await asyncio.to_thread(private_postgres.stop)
        status, body = await scrape(server.port, "/healthz")
        assert status == 503
        assert '"storage": "unreachable' in body and private_postgres.url.split("@")[1] not in body
        await asyncio.to_thread(private_postgres.restart)
        status, body = await scrape(server.port, "/healthz")
        assert status == 200, body


async def test_a_port_in_use_is_one_sentence(settings):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = settings.model_copy(update={"metrics_port": taken.getsockname()[1]})
        async with open_app(settings) as app:
            with pytest.raises(ConfigError, match="METRICS_PORT"):
                async with serve_metrics(settings, app):
                    pass


async def test_run_without_a_token_serves_health_and_metrics_from_the_console(tmp_path: Path):
    """`METRICS_PORT=0 python -m bot run` with no DISCORD_TOKEN: the console, its port in the log, a reply counted."""
    env = environment(f"sqlite:///{tmp_path}/run.db", METRICS_PORT="0", EMBEDDING_MODEL="local")
    child = await start(["-m", "bot", "run"], tmp_path, env, stdin=asyncio.subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        line = await wait_for_line(child.stderr, r"serving /healthz and /metrics on http://127\.0\.0\.1:\d+")
        port = int(line.rsplit(":", 1)[1])
        status, body = await scrape(port, "/healthz")
        assert status == 200, body
        child.stdin.write(b"I like green tea\nElefant, remember that I like tea\n")
        await child.stdin.drain()
        await wait_for_line(child.stdout, r"^\[3\] Elefant: ")
        page = samples((await scrape(port, "/metrics"))[1])
        assert names(page) >= EVERY_ENDPOINT_METRIC | {"elefant_embedding_backlog", "elefant_embedded_total"}
        assert value(page, "elefant_reply_seconds_count", route="remember") == 1
        assert (value(page, "elefant_embedded_total") or 0) >= 1  # the console embeds before it answers
        child.stdin.close()
        assert await asyncio.wait_for(child.wait(), 60) == 0
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
