"""Replies read defensively, whichever provider served them: thinking left out, JSON found in chatter or code
fences and checked against the pydantic model, and the one repair prompt a reply that is not valid JSON gets."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.llm.types import Prompt

_JSON_BLOCK = re.compile(r"\{.*\}", re.S)
_THOUGHT = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_OPENED = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
_CLOSED = re.compile(r"</(?:think|thinking|reasoning)>", re.I)


def without_thinking(text: str) -> str:
    """The answer alone, without what a model thought before it in the text: whole `<think>…</think>` blocks go;
    an unclosed block was cut off while thinking (no answer); a reply that holds only the closing tag began in
    the thought (chat templates such as DeepSeek-R1's open the block in the prompt), so what follows the tag is
    the answer."""
    text = _THOUGHT.sub("", text)
    if opened := _OPENED.search(text):
        text = text[: opened.start()]
    if closings := list(_CLOSED.finditer(text)):
        text = text[closings[-1].end() :]
    return text.strip()


def parse_json(text: str, schema: type[BaseModel]) -> BaseModel | None:
    """Parse a reply defensively: thinking, code fences and chatter around the JSON object are tolerated."""
    text = without_thinking(text)
    candidates = [text]
    if match := _JSON_BLOCK.search(text):
        candidates.append(match.group(0))
    for candidate in candidates:
        try:
            return schema.model_validate(json.loads(candidate))
        except (json.JSONDecodeError, ValidationError):
            continue
    return None


@functools.cache
def schema_text(schema: type[BaseModel]) -> str:
    """The model's JSON schema as text, for prompts (made once per class)."""
    return json.dumps(schema.model_json_schema())


def json_instructions(schema: type[BaseModel]) -> str:
    """What a prompt adds when the server checks only that the answer is JSON (JSON mode), not its shape."""
    return f"Answer with only a JSON object matching this JSON schema, nothing else:\n{schema_text(schema)}"


def repair_prompt(prompt: Prompt, schema: type[BaseModel]) -> Prompt:
    """The prompt asked again once when the reply was not valid JSON for `schema`."""
    return Prompt(
        system=prompt.system,
        user=f"{prompt.user}\n\nYour previous answer was not valid JSON. Answer again with only a JSON object "
        f"matching this schema:\n{schema_text(schema)}",
    )


def as_model(value: Any, schema: type[BaseModel]) -> BaseModel | None:
    """`value` (an SDK's parse: the model, or a dict) as `schema`, or None."""
    if isinstance(value, schema):
        return value
    if isinstance(value, dict):
        try:
            return schema.model_validate(value)
        except ValidationError:
            return None
    return None
