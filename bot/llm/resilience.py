"""Timeouts, retries with backoff and jitter (honouring the API's retry delay), limits, and the breaker — per model.

Google's quotas (requests and tokens per minute) and outages are per model, and the two roles use different
models: a retired batch model answering 404 must not switch off a healthy chat model. So every model id gets
a `Lane` of its own: a circuit breaker, a request limiter, a token limiter, a concurrency cap and a retry
policy. Roles that name the same model share its lane (they share its quota too).
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TypeVar

from aiolimiter import AsyncLimiter
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from bot import answer_due
from bot.llm.breaker import CircuitBreaker
from bot.llm.tokens import estimate_tokens
from bot.llm.types import (
    Call,
    EndpointError,
    EndpointUnreachableError,
    LLMError,
    LLMResult,
    LLMUnavailableError,
    Provider,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Dropped or refused connections of both HTTP stacks google-genai may use.

    google-genai sends through aiohttp when it is installed (discord.py installs it) and through httpx (or its
    fork httpx2, which google-genai 3.x depends on) otherwise; each raises its own exception types.
    """
    found: list[type[BaseException]] = []
    try:
        import aiohttp

        found += [
            aiohttp.ClientConnectorError,  # refused, unreachable, DNS (ClientConnectorDNSError subclasses it)
            aiohttp.ClientOSError,  # reset by peer, broken pipe
            aiohttp.ServerDisconnectedError,
            aiohttp.ClientPayloadError,  # the body was cut off
        ]
    except ImportError:  # pragma: no cover - aiohttp comes with discord.py
        pass
    for name in ("httpx", "httpx2"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        found += [module.TransportError]  # ConnectError, ReadError, RemoteProtocolError, every *Timeout …
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()
NETWORK_ERRORS: tuple[type[BaseException], ...] = (TimeoutError, *TRANSPORT_ERRORS)  # nothing came back
# Names as well as types: a third stack (or a vendored copy) raises look-alikes of httpx's classes.
_TRANSPORT_NAMES = {
    "ConnectError",
    "ReadError",
    "WriteError",
    "RemoteProtocolError",
    "ConnectTimeout",
    "ReadTimeout",
    "PoolTimeout",
    "WriteTimeout",
}
_SECONDS = re.compile(r"^([\d.]+)s$")


def _sdk_errors() -> ModuleType | None:
    """google-genai's errors, if the SDK is loaded: only a Gemini client raises them, and importing the SDK would
    cost every command that never makes one ~0.35 s (bot/llm/build.py imports it with the client)."""
    return sys.modules.get("google.genai.errors")


def is_transient(exc: BaseException) -> bool:
    """429, 408, 5xx, time-outs and dropped connections are worth another try; other errors are not."""
    errors = _sdk_errors()
    if errors is not None and isinstance(exc, errors.ClientError):
        return exc.code in {408, 429}
    if isinstance(exc, EndpointError):
        return exc.status in {408, 429} or exc.status >= 500
    if errors is not None and isinstance(exc, errors.ServerError):
        return True
    if isinstance(exc, (TimeoutError, EndpointUnreachableError, *TRANSPORT_ERRORS)):
        return True
    return type(exc).__name__ in _TRANSPORT_NAMES


def describe(exc: BaseException, timeout_s: float | None = None) -> str:
    """A failure as an operator reads it: the API's status and message, or what went wrong on the way."""
    errors = _sdk_errors()
    if errors is not None and isinstance(exc, errors.APIError):
        message = " ".join(str(exc.message or "").split())[:300]
        return f"{exc.code} {exc.status or ''}: {message}".replace("  ", " ").strip(": ")
    if isinstance(exc, (EndpointError, EndpointUnreachableError)):
        return " ".join(str(exc).split())[:300]
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError since 3.11
        return f"no answer within {timeout_s:g} s" if timeout_s else "timed out"
    if isinstance(exc, LLMError) and exc.__cause__ is not None:
        return describe(exc.__cause__, timeout_s)
    return f"{type(exc).__name__}: {exc}"[:300]


def server_retry_delay(exc: BaseException | None) -> float:
    """The delay the API asked for (google.rpc.RetryInfo, or an endpoint's Retry-After), in seconds, or 0."""
    if isinstance(exc, EndpointError):
        return exc.retry_after
    errors = _sdk_errors()
    if errors is None or not isinstance(exc, errors.APIError) or not isinstance(exc.details, dict):
        return 0.0
    for detail in exc.details.get("error", {}).get("details", []) or []:
        if isinstance(detail, dict) and (match := _SECONDS.match(str(detail.get("retryDelay", "")))):
            return float(match.group(1))
    return 0.0


@dataclass(frozen=True, slots=True)
class Limits:
    """What Google allows one model per minute: requests, and input tokens (None: not limited here)."""

    requests_per_minute: int
    tokens_per_minute: int | None = None


class Lane:
    """One model's own breaker, request and token limiters, concurrency cap and retry policy."""

    def __init__(
        self,
        model: str,
        *,
        breaker: CircuitBreaker,
        limits: Limits,
        max_concurrency: int,
        attempts: int,
        timeout_s: float,
        wait_initial: float,
        wait_max: float,
        period: float = 60.0,
    ) -> None:
        self.model = model
        self.breaker = breaker
        self.limits = limits
        self.attempts = attempts
        self.timeout_s = timeout_s
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._requests = AsyncLimiter(limits.requests_per_minute, period)
        self._tokens = AsyncLimiter(limits.tokens_per_minute, period) if limits.tokens_per_minute else None
        self._backoff = wait_exponential_jitter(initial=wait_initial, max=wait_max)
        self._wait_max = wait_max

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = server_retry_delay(exc)
        return min(max(self._backoff(state), asked), max(self._wait_max, asked))

    def _stop(self, state: RetryCallState) -> bool:
        # Under a reply's deadline a 429 or 500 whose retry would not fit (bot/answer_due.py) falls back now.
        return state.attempt_number >= self.attempts or answer_due.no_time_for(state.upcoming_sleep)

    def _log_retry(self, operation: str, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        cause = describe(exc, self.timeout_s) if exc is not None else "?"
        log.debug("%s %s failed (attempt %d): %s; retrying", self.model, operation, state.attempt_number, cause)

    async def run(self, operation: str, tokens: int, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt()` under this model's limits and retries; LLMUnavailableError at once while the breaker is open."""
        if not self.breaker.allow():
            raise LLMUnavailableError(f"{self.model} is skipped for a cool-down after repeated failures")
        retrying = AsyncRetrying(
            stop=self._stop,
            wait=self._wait,
            retry=retry_if_exception(is_transient),
            before_sleep=lambda state: self._log_retry(operation, state),
            reraise=True,
        )
        try:
            async for try_ in retrying:
                with try_:
                    async with self._semaphore:
                        await self._requests.acquire()
                        if self._tokens is not None:
                            # Input tokens are what Google meters; estimated from the prompt (erring high), and at
                            # most a full minute's worth, or one huge prompt could never pass.
                            await self._tokens.acquire(min(tokens, self._tokens.max_rate))
                        async with asyncio.timeout(self.timeout_s):
                            result = await attempt()
        except Exception as exc:
            self.breaker.failure(describe(exc, self.timeout_s))
            if isinstance(exc, LLMError):
                raise
            raise LLMError(f"{self.model} {operation} failed: {describe(exc, self.timeout_s)}") from exc
        self.breaker.success()
        return result


BreakerFactory = Callable[[str], CircuitBreaker]


class ResilientProvider:
    """Wraps a provider: per model a time-out per request, retries, a concurrency cap, limits and a breaker.

    `breaker` is either a factory (model id -> a new breaker: one per model, as `build_llm` does) or one
    breaker instance that every model shares (tests that drive a single model hold it to watch its state).
    `limits` maps a role or a model id to its Limits; the rest get `requests_per_minute` /
    `tokens_per_minute`.
    """

    def __init__(
        self,
        inner: Provider,
        *,
        attempts: int,
        timeout_s: float,
        max_concurrency: int,
        requests_per_minute: int,
        breaker: CircuitBreaker | BreakerFactory,
        tokens_per_minute: int | None = None,
        limits: Mapping[str, Limits] | None = None,
        wait_initial: float = 1.0,
        wait_max: float = 30.0,
        limit_period: float = 60.0,  # "per minute"; tests shorten it to watch a limit without waiting a minute
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self._attempts = attempts
        self._timeout_s = timeout_s
        self._max_concurrency = max_concurrency
        self._default = Limits(requests_per_minute, tokens_per_minute)
        self._limits = dict(limits or {})
        self._breaker = breaker
        self._wait = (wait_initial, wait_max)
        self._period = limit_period
        self.lanes: dict[str, Lane] = {}

    def model_for(self, call: Call) -> str:
        """The model id the inner provider will send this call to (its name when it has no models)."""
        model_for = getattr(self.inner, "model_for", None)
        return model_for(call.role) if model_for is not None else self.name

    def lane(self, model: str, role: str | None = None) -> Lane:
        """The model's lane, made on first use."""
        if (lane := self.lanes.get(model)) is None:
            limits = self._limits.get(model) or (self._limits.get(role) if role else None) or self._default
            breaker = (
                self._breaker
                if isinstance(self._breaker, CircuitBreaker)
                else self._breaker(model)  # one per model: the point of lanes
            )
            lane = self.lanes[model] = Lane(
                model,
                breaker=breaker,
                limits=limits,
                max_concurrency=self._max_concurrency,
                attempts=self._attempts,
                timeout_s=self._timeout_s,
                wait_initial=self._wait[0],
                wait_max=self._wait[1],
                period=self._period,
            )
        return lane

    @property
    def breaker(self) -> CircuitBreaker:
        """The shared breaker (only when one instance was given)."""
        if not isinstance(self._breaker, CircuitBreaker):
            raise AttributeError("each model has its own breaker: use lane(model).breaker")
        return self._breaker

    async def generate(self, call: Call) -> LLMResult:
        """Call the inner provider on the call's model lane; LLMUnavailableError at once while its breaker is open."""
        lane = self.lane(self.model_for(call), call.role)
        tokens = estimate_tokens(call.prompt.system + call.prompt.user)
        return await lane.run(call.operation, tokens, lambda: self.inner.generate(call))
