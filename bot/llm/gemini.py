"""The Gemini provider on google-genai's async client; copes with models without system or JSON mode."""

from __future__ import annotations

import copy
import functools
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from google import genai
from google.genai import types
from pydantic import BaseModel

from bot.llm.structured import as_model, parse_json, repair_prompt
from bot.llm.types import Call, LLMError, LLMResult, Prompt, Role

log = logging.getLogger(__name__)


def model_name(model: str) -> str:
    """The bare model id: `models/gemma-3-27b-it` and `tunedModels/…` paths lose their prefix, case is folded."""
    return model.rsplit("/", 1)[-1].strip().lower()


def lacks_system_and_json(model: str) -> bool:
    """Gemma models served by the Gemini API take neither system instructions nor JSON mode (any id form)."""
    return model_name(model).startswith("gemma")


_GEMINI_GENERATION = re.compile(r"^gemini-(\d+)(?:\.\d+)?-")
_LATEST_ALIAS = re.compile(r"^gemini-(?:flash|flash-lite|pro)-latest$")


def keeps_default_temperature(model: str) -> bool:
    """Gemini 3 and later: Google advises leaving temperature at its default (1.0).

    Its Gemini 3 guide: "we strongly recommend keeping the temperature parameter at its default value of
    1.0 … setting it to less than 1.0 may lead to unexpected behavior, looping, or degraded performance".
    The `-latest` aliases point at the newest generation. Gemma and Gemini 2.x keep our temperatures.
    """
    name = model_name(model)
    if _LATEST_ALIAS.match(name):
        return True
    match = _GEMINI_GENERATION.match(name)
    return match is not None and int(match.group(1)) >= 3


def temperature_for(model: str, wanted: float) -> float | None:
    """The temperature to send: ours, or None (the model's own default) where Google advises that."""
    return None if keeps_default_temperature(model) else wanted


class GeminiProvider:
    """One request per call; retries, limits and the breaker live in `ResilientProvider`."""

    name = "gemini"

    def __init__(self, client: genai.Client, *, models: Mapping[Role, str], timeout_s: float) -> None:
        self._client = client
        self._models = models
        self._timeout_ms = int(timeout_s * 1000)

    def model_for(self, role: Role) -> str:
        """The model id a role is sent to (the resilience layer keeps one lane per model)."""
        return self._models[role]

    async def generate(self, call: Call) -> LLMResult:
        """Ask the model for the call's role; with a schema, return the parsed object (one repair retry)."""
        operation, prompt, schema, temperature = call.operation, call.prompt, call.schema, call.temperature
        model = self._models[call.role]
        started = time.perf_counter()
        response = await self._call(model, prompt, schema, temperature)
        tokens_in, tokens_out = _usage(response)
        if _refused(response):
            log.info("%s declined %s (safety block)", model, operation)
            return LLMResult(
                "", None, tokens_in, tokens_out, model, time.perf_counter() - started, self.name, refused=True
            )
        text = response.text or ""
        parsed: Any = None
        if schema is not None:
            parsed = as_model(response.parsed, schema) or parse_json(text, schema)
            if parsed is None:
                log.warning("%s: reply to %s was not valid JSON; asking once to repair it", model, operation)
                response = await self._call(model, repair_prompt(prompt, schema), schema, temperature)
                text = response.text or ""
                more_in, more_out = _usage(response)
                tokens_in, tokens_out = tokens_in + more_in, tokens_out + more_out
                parsed = parse_json(text, schema)
                if parsed is None:
                    raise LLMError(f"{model} did not return valid JSON for {operation}")
        elif not text.strip():
            raise LLMError(f"{model} returned no text for {operation} (blocked or empty)")
        return LLMResult(text, parsed, tokens_in, tokens_out, model, time.perf_counter() - started, self.name)

    async def _call(
        self, model: str, prompt: Prompt, schema: type[BaseModel] | None, temperature: float
    ) -> types.GenerateContentResponse:
        config = types.GenerateContentConfig(
            temperature=temperature_for(model, temperature), http_options=types.HttpOptions(timeout=self._timeout_ms)
        )
        contents = prompt.user
        if lacks_system_and_json(model):
            contents = f"{prompt.system}\n\n{prompt.user}"
        else:
            config.system_instruction = prompt.system
            if schema is not None:
                config.response_mime_type = "application/json"
                config.response_schema = _json_schema(schema)
        return await self._client.aio.models.generate_content(model=model, contents=contents, config=config)


def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema as the SDK would make it from the class, made once: the SDK generates a class's JSON schema
    afresh on every call (~0.35 ms of the event loop, a third of a routing call's own cost). The request sent
    is the same; the SDK edits what it is given, hence a copy each time."""
    return copy.deepcopy(_schema_of(schema))


@functools.cache
def _schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


_BLOCKED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"}


def _refused(response: types.GenerateContentResponse) -> bool:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason:
        return True
    candidates = response.candidates or []
    return bool(candidates) and str(getattr(candidates[0].finish_reason, "name", "")) in _BLOCKED


def _usage(response: types.GenerateContentResponse) -> tuple[int, int]:
    """(input, output) tokens; thinking tokens are billed as output, so they count as output here too."""
    usage = response.usage_metadata
    if usage is None:
        return 0, 0
    out = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return usage.prompt_token_count or 0, out
