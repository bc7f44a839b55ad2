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

    route: Literal["remember", "forget", "about", "recall", "recap", "chat"]
    subject: str | None = Field(default=None, description="'me', a mention like <@123>, or a member's name")
    fact: str | None = None


class UserSummary(BaseModel):
    """One member's summary of a day."""

    user_id: str
    summary: str


class DailySummaries(BaseModel):
    """Every active member's summary of a day (a list: JSON schemas for maps are poorly supported)."""

    summaries: list[UserSummary]


class RecapItem(BaseModel):
    """One thread of conversation in a recap: what it was about, who said what, and the messages that matter."""

    thread: int
    title: str
    summary: str
    decisions: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    refs: list[int] = Field(default_factory=list, description="refs of the 1-3 messages that matter most")


class Recap(BaseModel):
    """A recap of a span: its threads, the ones that matter most first."""

    threads: list[RecapItem]
