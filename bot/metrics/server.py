"""The small aiohttp app behind METRICS_PORT: /healthz and /metrics, on the bot's own event loop (no thread),
within the limits of bot/metrics/limits.py (connections, time-outs, sizes, how often /metrics is collected)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from bot.memory.flight import SingleFlight
from bot.metrics.health import check
from bot.metrics.limits import BACKLOG, HANDLER_ARGS, MAX_BODY, AcceptErrors, Gate, MetricsPage, no_body
from bot.metrics.meters import Meters
from bot.settings import ConfigError

if TYPE_CHECKING:
    from bot.app import App
    from bot.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MetricsServer:
    """Where the server listens (METRICS_PORT=0 picks a free port) and the meters it serves."""

    host: str
    port: int
    meters: Meters


@contextlib.asynccontextmanager
async def serve_metrics(
    settings: Settings, app: App, *, gateway: Callable[[], bool] | None = None
) -> AsyncIterator[MetricsServer | None]:
    """Serve /healthz and /metrics while the block runs, when METRICS_PORT is set (else yield None).

    `gateway`: whether Discord's gateway is connected now (the bot); None for the console, which has none.
    A port that cannot be bound ends start-up with one sentence (a ConfigError naming the setting).
    """
    if settings.metrics_port is None:
        yield None
        return
    meters = Meters(app, settings)
    engine = app.memory.engine
    # A flood of /healthz runs one storage check at a time (each would take a database connection the replies
    # need); every request asking meanwhile gets its result, and one that goes away does not cancel it.
    checks = SingleFlight()

    async def healthz(_request: web.Request) -> web.Response:
        answer = await checks.run("healthz", lambda: check(engine, gateway))
        return web.json_response({"ready": answer.ready, **answer.checks}, status=200 if answer.ready else 503)

    gate = Gate()
    web_app = web.Application(middlewares=[gate.busy, no_body], client_max_size=MAX_BODY, handler_args=HANDLER_ARGS)
    web_app.router.add_get("/metrics", MetricsPage(meters.registry).handle)
    web_app.router.add_get("/healthz", healthz)
    # No access log: a scrape every 15 s is no news. A scrape in flight at a stop is not worth waiting for.
    runner = web.AppRunner(web_app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    assert runner.server is not None
    loop = asyncio.get_running_loop()
    accept_errors = AcceptErrors(loop)
    try:
        # aiohttp's documented low-level way (its server is the protocol factory), through the gate.
        listener = await loop.create_server(
            gate.factory(runner.server), settings.metrics_host, settings.metrics_port, backlog=BACKLOG
        )
    except OSError as exc:
        await runner.cleanup()
        raise ConfigError(
            f"METRICS_PORT {settings.metrics_port} cannot be opened on METRICS_HOST {settings.metrics_host} "
            f"({(exc.strerror or type(exc).__name__).lower()}); choose a free port, or leave METRICS_PORT empty."
        ) from None
    accept_errors.install()
    port = int(listener.sockets[0].getsockname()[1])
    log.info("serving /healthz and /metrics on http://%s:%d", settings.metrics_host, port)
    try:
        yield MetricsServer(settings.metrics_host, port, meters)
    finally:
        listener.close()
        await runner.cleanup()
        accept_errors.restore()
