"""The provider for OpenAI-compatible endpoints (Ollama, llama.cpp's server, vLLM, OpenRouter) on the official
`openai` client: one request per call; retries, limits and the breaker live in `ResilientProvider`.

Servers differ in what they accept and return, so this module meets them where they are:
- structured output as a JSON schema (`response_format` json_schema, the strict schema `chat.completions.parse`
  sends); a model whose server refuses schemas (400 or 422) is asked in JSON mode from then on, the schema in its
  instructions, and every reply is checked against the same pydantic model, with one repair call;
- thinking: a separate reasoning field (`reasoning_content`, `reasoning`) is never taken for the answer, and
  `<think>` blocks in the text are left out;
- errors: the SDK's are turned into the layer's `EndpointError` (status, message, Retry-After) and
  `EndpointUnreachableError`, and its time-out into `TimeoutError`, which the resilience layer retries or not.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import openai

# The strict schema `chat.completions.parse` sends; parse() itself raises at a reply that is not valid JSON, which
# would leave nothing to read defensively or to repair.
from openai.lib._pydantic import to_strict_json_schema
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from bot.llm.structured import json_instructions, parse_json, repair_prompt, without_thinking
from bot.llm.tokens import estimate_tokens
from bot.llm.types import (
    Call,
    EndpointError,
    EndpointUnreachableError,
    LLMError,
    LLMResult,
    Prompt,
    Role,
)
from bot.settings import Settings

log = logging.getLogger(__name__)
OPENAI_URL = "https://api.openai.com/v1"
NO_KEY = "none"  # local servers take any key, and the client refuses to start without one
SCHEMA_REFUSED = {400, 422}  # how servers refuse a response_format they do not support


def make_openai_client(settings: Settings) -> openai.AsyncOpenAI:
    """The `openai` client as the bot uses it: our own retries (`max_retries=0`: the SDK would otherwise retry
    twice itself, outside our limits, deadline and breaker) and time-out."""
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key is not None else NO_KEY
    return openai.AsyncOpenAI(
        base_url=settings.openai_base_url or OPENAI_URL,
        api_key=key,
        max_retries=0,
        timeout=settings.llm_timeout_seconds,
    )


def endpoint_error(exc: openai.APIError) -> LLMError | TimeoutError:
    """The SDK's error as the resilience layer reads it."""
    if isinstance(exc, openai.APITimeoutError):
        return TimeoutError("the endpoint did not answer in time")
    if isinstance(exc, openai.APIStatusError):
        return EndpointError(exc.status_code, _message(exc), retry_after=retry_after(exc.response.headers))
    cause = exc.__cause__
    return EndpointUnreachableError(f"{type(cause).__name__}: {cause}" if cause is not None else str(exc))


def _message(exc: openai.APIStatusError) -> str:
    """The server's own words: OpenAI's {"error": {"message": …}}, Ollama's {"error": "…"}, or plain text."""
    body = exc.body
    if isinstance(body, dict):
        body = body.get("message") or body.get("detail") or body
    text = body if isinstance(body, str) else exc.response.reason_phrase
    return " ".join(str(text).split())[:300]


def retry_after(headers: Mapping[str, str]) -> float:
    """Seconds the endpoint asked to wait: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date."""
    if value := headers.get("retry-after-ms"):
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    if not (value := headers.get("retry-after")):
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@functools.cache
def schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """`response_format` for a JSON schema, made once per class."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": to_strict_json_schema(schema), "strict": True},
    }


JSON_MODE = {"type": "json_object"}


class OpenAIProvider:
    """Chat completions on an OpenAI-compatible endpoint, with a model per role."""

    name = "openai"

    def __init__(self, client: openai.AsyncOpenAI, *, models: Mapping[Role, str]) -> None:
        self._client = client
        self._models = models
        self.json_mode: set[str] = set()  # models whose server refused a JSON schema: asked in JSON mode

    def model_for(self, role: Role) -> str:
        """The model a role is sent to (the resilience layer keeps one lane per model)."""
        return self._models[role]

    async def generate(self, call: Call) -> LLMResult:
        """Ask the role's model; with a schema, return the parsed object (one repair call)."""
        operation, prompt, schema = call.operation, call.prompt, call.schema
        model = self._models[call.role]
        started = time.perf_counter()
        reply = _Reply(await self._complete(model, prompt, schema, call.temperature), prompt)
        if reply.refused:
            log.info("%s declined %s (content filter or refusal)", model, operation)
            return LLMResult("", None, *reply.tokens, model, time.perf_counter() - started, self.name, refused=True)
        tokens_in, tokens_out = reply.tokens
        parsed: Any = None
        if schema is not None:
            parsed = parse_json(reply.text, schema)
            if parsed is None:
                log.warning("%s: reply to %s was not valid JSON; asking once to repair it", model, operation)
                repair = repair_prompt(prompt, schema)
                reply = _Reply(await self._complete(model, repair, schema, call.temperature), repair)
                tokens_in, tokens_out = tokens_in + reply.tokens[0], tokens_out + reply.tokens[1]
                parsed = parse_json(reply.text, schema)
                if parsed is None:
                    raise LLMError(f"{model} did not return valid JSON for {operation}")
        elif not reply.text:
            why = " (only its reasoning: it ran out of tokens while thinking?)" if reply.reasoning else ""
            raise LLMError(f"{model} returned no answer for {operation}{why}")
        latency = time.perf_counter() - started
        return LLMResult(reply.text, parsed, tokens_in, tokens_out, model, latency, self.name)

    async def _complete(
        self, model: str, prompt: Prompt, schema: type[BaseModel] | None, temperature: float
    ) -> ChatCompletion:
        """One completion; with a schema, as a JSON schema where the server takes it, else in JSON mode."""
        if schema is None:
            return await self.create(model, prompt, temperature=temperature)
        if model not in self.json_mode:
            try:
                return await self.create(model, prompt, temperature=temperature, response_format=schema_format(schema))
            except EndpointError as exc:
                if exc.status not in SCHEMA_REFUSED:
                    raise
                log.warning(
                    "%s refused a JSON schema (%s); asking in JSON mode and checking replies against the schema",
                    model,
                    exc,
                )
        instructed = Prompt(system=f"{prompt.system}\n\n{json_instructions(schema)}", user=prompt.user)
        completion = await self.create(model, instructed, temperature=temperature, response_format=JSON_MODE)
        self.json_mode.add(model)  # only once JSON mode worked: a 400 about something else changes nothing
        return completion

    async def create(
        self,
        model: str,
        prompt: Prompt,
        *,
        temperature: float | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> ChatCompletion:
        """One chat completion, not streamed; the SDK's errors as the resilience layer reads them."""
        options: dict[str, Any] = {}
        if temperature is not None:
            options["temperature"] = temperature
        if response_format is not None:
            options["response_format"] = response_format
        messages: list[Any] = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ]
        try:
            return await self._client.chat.completions.create(model=model, messages=messages, stream=False, **options)
        except openai.APIError as exc:
            raise endpoint_error(exc) from exc


class _Reply:
    """What one completion said: the answer without thinking, the reasoning apart, tokens, a refusal."""

    def __init__(self, completion: ChatCompletion, prompt: Prompt) -> None:
        if not completion.choices:
            raise LLMError(f"{completion.model or 'the model'} answered without a choice")
        choice = completion.choices[0]
        message = choice.message
        extra = message.model_extra or {}
        # vLLM, llama.cpp and DeepSeek send `reasoning_content`; OpenRouter and Ollama `reasoning`.
        self.reasoning = str(extra.get("reasoning_content") or extra.get("reasoning") or "")
        self.text = without_thinking(message.content or "")
        self.refused = bool(message.refusal) or choice.finish_reason == "content_filter"
        usage = completion.usage
        if usage is not None and usage.prompt_tokens is not None:
            # Reasoning tokens are part of completion_tokens: billed as output, counted as output.
            self.tokens = (usage.prompt_tokens or 0, usage.completion_tokens or 0)
        else:  # a server that does not count: estimated, as the offline provider does
            said = (message.content or "") + self.reasoning
            self.tokens = (estimate_tokens(prompt.system + prompt.user), estimate_tokens(said))
