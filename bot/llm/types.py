"""The provider protocol and what a call returns; shared by every provider."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

Role = Literal["batch", "fast"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A rendered prompt: the instructions, and the user part that carries the (escaped) data."""

    system: str
    user: str


@dataclass(frozen=True, slots=True)
class LLMResult:
    """What one call produced, with what it cost."""

    text: str
    parsed: Any
    tokens_in: int
    tokens_out: int
    model: str
    latency_s: float
    provider: str
    degraded: bool = False
    refused: bool = False  # the model declined (safety block): a real answer that says "nothing"


@dataclass(frozen=True, slots=True)
class Call:
    """One operation to answer: the rendered prompt and the structured inputs it was rendered from."""

    operation: str
    prompt: Prompt
    variables: Mapping[str, Any]
    schema: type[BaseModel] | None = None
    temperature: float = 0.7
    role: Role = "fast"


class LLMError(Exception):
    """A model call failed (after retries)."""


class LLMUnavailableError(LLMError):
    """The circuit breaker is open: the model is skipped for now."""


class EndpointError(LLMError):
    """A model endpoint answered with an error status: what a provider turns its SDK's status errors into, so the
    resilience layer reads every provider alike (google-genai's own errors it reads directly)."""

    def __init__(self, status: int, message: str, *, retry_after: float = 0.0) -> None:
        super().__init__(f"{status} {message}".strip())
        self.status = status
        self.message = message
        self.retry_after = retry_after  # seconds the endpoint asked to wait (Retry-After), 0 when it did not say


class EndpointUnreachableError(LLMError):
    """Nothing came back from a model endpoint: the connection was refused, dropped or cut off."""


class Provider(Protocol):
    """Anything that can answer an operation: the Gemini provider, the offline provider, test doubles."""

    name: str

    async def generate(self, call: Call) -> LLMResult:
        """Answer one operation."""
        ...
