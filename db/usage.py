"""Data access for model usage: one llm_calls row per call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import LlmCall


async def record(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert call records (keys: the llm_calls columns)."""
    if rows:
        await session.execute(insert(LlmCall), list(rows))
