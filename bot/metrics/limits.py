"""The metrics port's limits: it shares the bot's event loop and its open-file limit, so whoever can reach it must
not be able to take either from the replies.

Measured without them (issue 37, a 1,024 open-file limit): 1,100 idle connections took every descriptor (/healthz
timed out, asyncio logged 20–28k accept errors, a memory write took 5–6 s); 1,000 slowloris connections were all
still open after 20 s; 32 clients scraping in a loop pushed chat replies from 5–11 ms to 0.3–3.3 s.
"""

from __future__ import annotations

import asyncio
import errno
import gzip
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

# Open connections at most. A new one beyond this closes the oldest idle one (nginx does the same with its
# keep-alive connections), so a flood of idle connections cannot keep out a health check; with none idle (all
# answering), the new one is closed at once.
CONNECTIONS = 64
# Connections accepted per wake-up of the loop, and the kernel's queue of those not accepted yet. The cap above is
# checked as each is accepted, before those accepted with it count: briefly up to this many more are open, and as
# many again being closed to make room.
BACKLOG = 64
# A connection that has not sent a whole request this long after it opened, or after its last answer, is closed.
# aiohttp has no separate header time-out, but its keep-alive timer starts when the connection opens and is not
# moved by partial data: a slowloris that trickles a header byte by byte is closed after this long all the same.
IDLE_SECONDS = 5.0
LINGER_SECONDS = 1.0  # how long an unread request body is read and dropped before the connection is closed
# Prometheus asks with a short line and a few headers; a bearer token in a header fits in MAX_FIELD.
MAX_LINE = 2048
MAX_FIELD = 4096
MAX_HEADERS = 32
MAX_BODY = 1024  # /healthz and /metrics take no body: a larger one is refused (413) without being read
RENDER_SECONDS = 1.0  # /metrics collects its levels at most once per this many seconds; scrapes meanwhile share it
ACCEPT_ERRORS_SECONDS = 60.0  # "out of descriptors" while accepting is said at most once per this many seconds

HANDLER_ARGS: dict[str, Any] = {  # aiohttp's per-connection settings (web.AppRunner passes them on)
    "keepalive_timeout": IDLE_SECONDS,
    "lingering_time": LINGER_SECONDS,
    "max_line_size": MAX_LINE,
    "max_field_size": MAX_FIELD,
    "max_headers": MAX_HEADERS,
}


class Gate:
    """Keeps the port within CONNECTIONS open connections: `factory(server)` is its listening socket's protocol
    factory, the `busy` middleware marks the connections answering a request. The others are idle (waiting for a
    request, or in the middle of sending one) and are the ones closed to make room.
    """

    def __init__(self, *, limit: int = CONNECTIONS) -> None:
        self._limit = limit
        self._answering: dict[web.RequestHandler, int] = {}

    def factory(self, server: web.Server) -> Callable[[], asyncio.BaseProtocol]:
        """aiohttp's connection handler for each new connection, once there is room for it."""

        def admit() -> asyncio.BaseProtocol:
            open_now = [h for h in server.connections if h.transport is not None and not h.transport.is_closing()]
            excess = len(open_now) + 1 - self._limit
            if excess > 0:
                idle = [h for h in open_now if h not in self._answering]  # oldest first, as the server keeps them
                for handler in idle[:excess]:
                    handler.force_close()
                if len(idle) < excess:
                    return _Refused()
            return server()

        return admit

    @web.middleware
    async def busy(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Mark the request's connection as answering while its handler runs (it is then never closed for room)."""
        protocol = request.protocol
        self._answering[protocol] = self._answering.get(protocol, 0) + 1
        try:
            return await handler(request)
        finally:
            if (left := self._answering.pop(protocol) - 1) > 0:
                self._answering[protocol] = left


class _Refused(asyncio.Protocol):
    """A connection beyond the cap while every open one is answering: closed as soon as it is made."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


@web.middleware
async def no_body(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a body larger than MAX_BODY, or of unknown length, before anything reads it (aiohttp's own limit,
    client_max_size, applies only when a handler reads the body, and these handlers never do)."""
    if request.body_exists and (request.content_length is None or request.content_length > MAX_BODY):
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=request.content_length or 0)
    return await handler(request)


class MetricsPage:
    """GET /metrics (`handle`): the registry collected at most once per RENDER_SECONDS, never a page older than
    the request.

    A scrape collects every level and formats the page on the event loop: 32 clients scraping in a loop took the
    loop from the replies. Here a scrape that comes less than RENDER_SECONDS after the last collection waits for
    the next one, which every scrape waiting meanwhile shares: a client in a loop gets a page a second, and the
    loop renders one a second, however many ask. Two formats (and gzip or not): OpenMetrics 1.0 for a client that
    accepts it (Prometheus), else the classic text format; prometheus_client's `name[]` filter is not offered (each
    filter would be one more page to render).
    """

    def __init__(self, registry: Collector, *, seconds: float = RENDER_SECONDS) -> None:
        self._registry = registry
        self._seconds = seconds
        self._last = -float("inf")  # time.monotonic() of the last collection
        self._next: asyncio.Future[dict[tuple[bool, bool], bytes]] | None = None
        self._wanted: set[tuple[bool, bool]] = set()  # the formats asked of the next collection

    async def handle(self, request: web.Request) -> web.Response:
        """The page in the format the client accepts, collected after the request came."""
        openmetrics = "application/openmetrics-text" in ",".join(request.headers.getall("Accept", []))
        gzipped = gzip_accepted(",".join(request.headers.getall("Accept-Encoding", [])))
        if self._next is None:
            self._next = asyncio.ensure_future(self._collect())
        self._wanted.add((openmetrics, gzipped))
        pages = await asyncio.shield(self._next)  # a scraper that leaves does not cancel the others' page
        headers = {"Content-Type": _FORMATS[openmetrics][1]}
        if gzipped:
            headers["Content-Encoding"] = "gzip"
        return web.Response(body=pages[(openmetrics, gzipped)], headers=headers)

    async def _collect(self) -> dict[tuple[bool, bool], bytes]:
        await asyncio.sleep(max(0.0, self._last + self._seconds - time.monotonic()))
        wanted, self._wanted, self._next = self._wanted, set(), None  # a scrape from now on waits for the next
        self._last = time.monotonic()
        collected = _Collected(list(self._registry.collect()))
        pages: dict[tuple[bool, bool], bytes] = {}
        for openmetrics, gzipped in wanted:
            page = _FORMATS[openmetrics][0](collected)
            pages[(openmetrics, gzipped)] = gzip.compress(page) if gzipped else page
        return pages


# The encoders prometheus_client would choose for "accepts OpenMetrics" (version 1.0.0) and for the rest (text).
_FORMATS = {True: choose_encoder("application/openmetrics-text"), False: choose_encoder("")}


class _Collected:
    """Metrics collected once, for each format's encoder (they only call `collect`)."""

    def __init__(self, metrics: list[Metric]) -> None:
        self._metrics = metrics

    def collect(self) -> list[Metric]:
        return self._metrics


class AcceptErrors:
    """The loop's exception handler while the port is open: "out of descriptors" on accept at most one line per
    ACCEPT_ERRORS_SECONDS (with how many were not said); anything else goes to the handler there was before.

    On Python 3.11 asyncio reports the error for every connection waiting in the backlog and schedules a retry for
    each: at the open-file limit that was 20–28k log lines, each one more work for a loop that replies wait on.
    """

    EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

    def __init__(self, loop: asyncio.AbstractEventLoop, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._loop = loop
        self._clock = clock
        self._before = loop.get_exception_handler()
        self._said = -float("inf")
        self._unsaid = 0

    def install(self) -> None:
        """Take over the loop's exception handler (`restore` gives it back)."""
        self._loop.set_exception_handler(self._handle)

    def restore(self) -> None:
        """Give the loop back the handler it had."""
        self._loop.set_exception_handler(self._before)

    def _handle(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in self.EXHAUSTED and "accept" in str(context.get("message", "")):
            now = self._clock()
            if now - self._said < ACCEPT_ERRORS_SECONDS:
                self._unsaid += 1
                return
            log.warning(
                "the metrics port cannot accept connections: %s%s",
                (exc.strerror or type(exc).__name__).lower(),
                f" ({self._unsaid:,} more times since the last such line)" if self._unsaid else "",
            )
            self._said, self._unsaid = now, 0
            return
        if self._before is not None:
            self._before(loop, context)
        else:
            loop.default_exception_handler(context)
