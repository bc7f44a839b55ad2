"""bot/metrics/limits.py through the real server: idle and slowloris connections are closed, oversized requests
refused, scrapers in a loop share one collection a second, concurrent health checks one storage check
(issue 37: the metrics port had no limits). The flood of connections at the open-file limit: test_flood.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import aiohttp
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import event

from bot.app import open_app
from bot.metrics.limits import CONNECTIONS, IDLE_SECONDS, MAX_FIELD, RENDER_SECONDS
from bot.metrics.server import serve_metrics
from bot.settings import Settings
from tests.metrics.scrape import samples, scrape, value

HANG_GUARD = 10.0  # beyond IDLE_SECONDS: a busy machine's slack, not a measure
PARTIAL = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def _served(settings: Settings) -> Settings:
    return settings.model_copy(update={"metrics_port": 0, "embedding_model": None})


async def _closed_by_the_server(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):  # a response, if any, then the end of the stream
        pass


async def _trickle(writer: asyncio.StreamWriter) -> None:
    """A slowloris: a header a byte at a time, never finished."""
    writer.write(PARTIAL)
    while not writer.is_closing():
        writer.write(b"a")
        await asyncio.sleep(0.5)


async def test_idle_kept_alive_and_slowloris_connections_are_closed_by_the_server(settings):
    """Each kind below the connection cap (so it is the time-out that closes them, not the room for others)."""
    settings = _served(settings)
    kinds = CONNECTIONS // 4
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is not None
        idle = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(kinds)]
        slow = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(kinds)]
        answered = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(kinds)]
        for _reader, writer in answered:  # HTTP/1.1: the connection stays open after the answer
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        trickles = [asyncio.create_task(_trickle(writer)) for _reader, writer in slow]
        try:
            async with asyncio.timeout(IDLE_SECONDS + HANG_GUARD):
                await asyncio.gather(*(_closed_by_the_server(reader) for reader, _ in idle + slow + answered))
        finally:
            for _reader, writer in idle + slow + answered:
                writer.close()
            await asyncio.gather(*trickles, return_exceptions=True)


async def test_a_long_header_line_or_a_body_is_refused(settings):
    settings = _served(settings)
    async with (
        open_app(settings) as app,
        serve_metrics(settings, app) as server,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HANG_GUARD)) as session,
    ):
        assert server is not None
        url = f"http://127.0.0.1:{server.port}"
        async with session.get(f"{url}/metrics", headers={"X-Long": "a" * (MAX_FIELD + 1)}) as response:
            assert 400 <= response.status < 500
        async with session.get(f"{url}/metrics?{'a' * 4 * MAX_FIELD}") as response:
            assert 400 <= response.status < 500
        async with session.get(f"{url}/healthz", data=b"x" * 65536) as response:
            assert response.status == 413
        async with session.get(f"{url}/metrics", data=b"x" * 65536) as response:
            assert response.status == 413

        async def chunks():  # a body of no declared length
            yield b"x" * 1000

        async with session.get(f"{url}/healthz", data=chunks()) as response:
            assert response.status == 413
        assert (await scrape(server.port, "/healthz"))[0] == 200  # what a probe sends is answered


class _Collections(Collector):
    """Counts how often the registry is collected, and shows the count on the page."""

    def __init__(self) -> None:
        self.count = 0

    def collect(self) -> Iterator[Metric]:
        self.count += 1
        yield GaugeMetricFamily("test_collections", "Collections so far.", value=self.count)


async def test_scrapers_in_a_loop_share_one_collection_a_second_and_each_page_is_newer_than_its_request(settings):
    settings = _served(settings)
    scrapers, rounds = 32, 4
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is not None
        collections = _Collections()
        server.meters.registry.register(collections)

        async def scraper() -> None:
            for _ in range(rounds):
                seen = collections.count  # collections that began before this request
                status, text = await scrape(server.port, "/metrics")
                assert status == 200
                assert (value(samples(text), "test_collections") or 0) > seen

        started = time.monotonic()
        async with asyncio.timeout(rounds * RENDER_SECONDS + 60):
            await asyncio.gather(*(scraper() for _ in range(scrapers)))
        elapsed = time.monotonic() - started
    # One collection per RENDER_SECONDS at most, however many scrape (it was one per scrape: 128 here).
    assert collections.count <= elapsed / RENDER_SECONDS + 2
    assert collections.count < scrapers * rounds / 4


async def test_concurrent_health_checks_share_one_storage_check(settings):
    """A flood of /healthz runs one SELECT 1 at a time: each would hold a connection the replies need."""
    settings = _served(settings)
    async with open_app(settings) as app, serve_metrics(settings, app) as server:
        assert server is not None
        engine = app.memory.engine.sync_engine
        in_flight = most = pings = 0

        def before(_conn, _cursor, statement, *_args) -> None:
            nonlocal in_flight, most, pings
            if statement.strip() == "SELECT 1":
                in_flight, pings = in_flight + 1, pings + 1
                most = max(most, in_flight)

        def after(_conn, _cursor, statement, *_args) -> None:
            nonlocal in_flight
            if statement.strip() == "SELECT 1":
                in_flight -= 1

        event.listen(engine, "before_cursor_execute", before)
        event.listen(engine, "after_cursor_execute", after)
        try:
            answers = await asyncio.gather(*(scrape(server.port, "/healthz") for _ in range(32)))
        finally:
            event.remove(engine, "before_cursor_execute", before)
            event.remove(engine, "after_cursor_execute", after)
    assert [status for status, _ in answers] == [200] * 32
    assert most == 1 and 1 <= pings < 32
