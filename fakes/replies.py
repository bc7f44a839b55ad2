"""What a stub model server answers, whichever API it speaks (fakes/gemini_stub.py, fakes/openai_stub.py): the
scripted model (fakes/model_doubles.py) and the tests choose a `Reply`; each stub puts it on its own wire."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """What the stub answers: a status, a text (or JSON) body, a delay before answering."""

    text: str = ""
    status: int = 200
    delay: float = 0.0
    retry_delay: str | None = None  # Gemini: a google.rpc.RetryInfo delay such as "0.2s"
    tokens_in: int = 11
    tokens_out: int = 7
    thoughts: int = 0  # thinking tokens (Gemini 2.5+ reports them apart from the answer's tokens)
    blocked: bool = False
    headers: dict[str, str] = field(default_factory=dict)  # e.g. an OpenAI-compatible server's Retry-After
    reasoning: str = ""  # what a thinking model thought (the OpenAI stub's reasoning field)


def text(value: str, **kw: Any) -> Reply:
    """A plain text answer."""
    return Reply(text=value, **kw)


def as_json(value: Any, **kw: Any) -> Reply:
    """A JSON answer (what structured output looks like on the wire)."""
    return Reply(text=json.dumps(value), **kw)


def error(status: int, *, retry_delay: str | None = None, headers: dict[str, str] | None = None) -> Reply:
    """An API error; Gemini's 429 may carry a RetryInfo delay such as "0.2s", an OpenAI-compatible server's a
    `Retry-After` header."""
    return Reply(status=status, retry_delay=retry_delay, headers=dict(headers or {}))


def hang(seconds: float = 3600) -> Reply:
    """A request that does not answer for a long time."""
    return Reply(text="too late", delay=seconds)
