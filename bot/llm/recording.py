"""A provider that keeps what it was asked: the exact prompt a model would receive (`python -m bot prompt`)."""

from __future__ import annotations

from bot.llm.types import Call, LLMResult, Provider


class RecordingProvider:
    """Answers through `inner` and keeps every call, in order: the rendered prompt (system and user parts) is
    what a model would have received, captured where it is sent rather than assembled again beside it."""

    def __init__(self, inner: Provider) -> None:
        self._inner = inner
        self.name = inner.name
        self.calls: list[Call] = []

    async def generate(self, call: Call) -> LLMResult:
        """Keep the call, then answer it as `inner` does."""
        self.calls.append(call)
        return await self._inner.generate(call)

    def last(self, operation: str) -> Call | None:
        """The newest call of `operation` (e.g. "chat", the reply itself), or None."""
        return next((c for c in reversed(self.calls) if c.operation == operation), None)
