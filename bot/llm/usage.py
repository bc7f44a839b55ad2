"""Usage accounting: one `llm_calls` row per call, written after the call, never failing it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.models import LlmCall

log = logging.getLogger(__name__)


class UsageRecorder:
    """Records calls in SQL; a failing insert is logged and swallowed (accounting must not break replies)."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._sessions = sessions
        self._clock = clock

    async def record(
        self,
        *,
        operation: str,
        role: str,
        provider: str,
        model: str,
        tokens_in: int,
        tokens_out: int,
        latency_s: float,
        outcome: str,
        guild_id: int | None,
    ) -> None:
        """Insert one row."""
        row = LlmCall(
            at=self._clock(),
            guild_id=guild_id,
            operation=operation,
            role=role,
            provider=provider,
            model=model,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_ms=round(latency_s * 1000),
            outcome=outcome,
        )
        try:
            async with self._sessions() as session, session.begin():
                session.add(row)
        except SQLAlchemyError:
            log.exception("could not record an LLM call (%s)", operation)
