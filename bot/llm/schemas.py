"""Structured outputs the code parses (sent to Gemini as response schemas)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ForgetResult(BaseModel):
    """Whether the fact was found, and the facts text without it."""

    found: bool
    memory: str


class RouteDecision(BaseModel):
    """What a message addressed to the bot asks for."""

    route: Literal["remember", "forget", "about", "recall", "chat"]
    subject: str | None = Field(default=None, description="'me', a mention like <@123>, or a member's name")
    fact: str | None = None


class UserSummary(BaseModel):
    """One member's summary of a day."""

    user_id: str
    summary: str


class DailySummaries(BaseModel):
    """Every active member's summary of a day (a list: JSON schemas for maps are poorly supported)."""

    summaries: list[UserSummary]
