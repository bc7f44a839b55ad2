"""The facts track's model, backed by the LLM client (temperature 0: facts must not wander)."""

from __future__ import annotations

from collections.abc import Callable

from bot.llm.client import LLM
from bot.llm.prompts import when
from bot.llm.schemas import ForgetResult
from bot.memory.clock import Clock


class LLMFactsModel:
    """Merges, removes and condenses facts with the remember / forget / condense prompts."""

    def __init__(self, llm: LLM, *, zone: str | Callable[[int], str] = "UTC", clock: Clock | None = None) -> None:
        self._llm = llm
        # A guild's own zone (MemoryManager.zone), so "today" in a facts prompt is the guild's today.
        self._zone = zone if callable(zone) else (lambda _guild_id: zone)
        self._clock = clock or Clock()

    def _when(self, guild_id: int) -> dict[str, str]:
        return when(self._clock.now(), self._zone(guild_id))

    async def merge(self, *, guild_id: int, subject: str, existing: str, fact: str, max_chars: int) -> str:
        """The facts with `fact` merged in (newer wins)."""
        result = await self._llm.run(
            "remember",
            {
                "subject": subject,
                "existing": existing,
                "fact": fact,
                "max_chars": max_chars,
                **self._when(guild_id),
            },
            temperature=0,
            guild_id=guild_id,
        )
        return result.text

    async def remove(self, *, guild_id: int, subject: str, existing: str, fact: str) -> tuple[bool, str]:
        """Whether `fact` was found, and the facts without it."""
        result = await self._llm.run(
            "forget",
            {"subject": subject, "existing": existing, "fact": fact, **self._when(guild_id)},
            schema=ForgetResult,
            temperature=0,
            guild_id=guild_id,
        )
        parsed: ForgetResult = result.parsed
        return parsed.found, parsed.memory

    async def condense(self, *, guild_id: int, subject: str, existing: str, max_chars: int) -> str:
        """The facts rewritten within `max_chars`."""
        result = await self._llm.run(
            "condense",
            {"subject": subject, "existing": existing, "max_chars": max_chars, **self._when(guild_id)},
            temperature=0,
            guild_id=guild_id,
        )
        return result.text
