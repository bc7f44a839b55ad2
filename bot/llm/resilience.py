"""Timeouts, retries with backoff and jitter (honouring the API's retry delay), limits, and the breaker."""

from __future__ import annotations

import asyncio
import logging
import re

from aiolimiter import AsyncLimiter
from google.genai import errors
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from bot.llm.breaker import CircuitBreaker
from bot.llm.types import Call, LLMError, LLMResult, LLMUnavailableError, Provider

log = logging.getLogger(__name__)
_TRANSPORT = {
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


def is_transient(exc: BaseException) -> bool:
    """429, 408, 5xx, time-outs and dropped connections are worth another try; other errors are not."""
    if isinstance(exc, errors.ClientError):
        return exc.code in {408, 429}
    return isinstance(exc, errors.ServerError | TimeoutError) or type(exc).__name__ in _TRANSPORT


def server_retry_delay(exc: BaseException | None) -> float:
    """The delay the API asked for (google.rpc.RetryInfo), in seconds, or 0."""
    if not isinstance(exc, errors.APIError) or not isinstance(exc.details, dict):
        return 0.0
    for detail in exc.details.get("error", {}).get("details", []) or []:
        if isinstance(detail, dict) and (match := _SECONDS.match(str(detail.get("retryDelay", "")))):
            return float(match.group(1))
    return 0.0


class ResilientProvider:
    """Wraps a provider with a per-request timeout, retries, a concurrency cap, an RPM limit and a breaker."""

    def __init__(
        self,
        inner: Provider,
        *,
        attempts: int,
        timeout_s: float,
        max_concurrency: int,
        requests_per_minute: int,
        breaker: CircuitBreaker,
        wait_initial: float = 1.0,
        wait_max: float = 30.0,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.breaker = breaker
        self._attempts = attempts
        self._timeout_s = timeout_s
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._limiter = AsyncLimiter(requests_per_minute, 60)
        self._backoff = wait_exponential_jitter(initial=wait_initial, max=wait_max)
        self._wait_max = wait_max

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return min(max(self._backoff(state), server_retry_delay(exc)), max(self._wait_max, server_retry_delay(exc)))

    async def generate(self, call: Call) -> LLMResult:
        """Call the inner provider; raises LLMUnavailableError at once while the breaker is open."""
        operation = call.operation
        if not self.breaker.allow():
            raise LLMUnavailableError(f"{self.name} is skipped for a cool-down after repeated failures")
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=self._wait,
            retry=retry_if_exception(is_transient),
            before_sleep=lambda s: log.warning(
                "%s %s failed (attempt %d): %r; retrying",
                self.name,
                operation,
                s.attempt_number,
                s.outcome.exception() if s.outcome else None,
            ),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    async with self._semaphore, self._limiter, asyncio.timeout(self._timeout_s):
                        result = await self.inner.generate(call)
        except Exception as exc:
            self.breaker.failure()
            raise exc if isinstance(exc, LLMError) else LLMError(f"{self.name} {operation} failed: {exc!r}") from exc
        self.breaker.success()
        return result
