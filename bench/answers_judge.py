"""The answer benchmark's optional judge: a second model, any provider, grading each answer by a fixed rubric.

The rubric is prompts/judge.md (checked by the same loader as the bot's prompts, though the bot never loads it);
the verdict comes back as structured output (`Verdict`). The judge is configured by `JUDGE_PROVIDER` (gemini or
openai), `JUDGE_MODEL`, `JUDGE_BASE_URL` and `JUDGE_API_KEY` in the environment or `.env`, or by the benchmark's
flags (all but the key, which stays out of shell histories). It is built exactly as the bot builds its own model
(`bot.llm.build.build_llm`: the provider's client, retries, limits, breaker) with no offline fallback: a judge
that fails rules on nothing, and the report counts it.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.llm.build import build_llm
from bot.llm.client import LLM
from bot.llm.prompts import load_prompts
from bot.llm.types import LLMError
from bot.settings import ConfigError, Settings

log = logging.getLogger(__name__)
JUDGE = "judge"


class Verdict(BaseModel):
    """The judge's ruling on one answer: why first (a model that writes its reason first rules better), then it."""

    reason: str
    correct: bool


class JudgeSettings(BaseSettings):
    """JUDGE_PROVIDER, JUDGE_MODEL, JUDGE_BASE_URL, JUDGE_API_KEY, JUDGE_REQUESTS_PER_MINUTE (environment, `.env`)."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", env_file=".env", extra="ignore", env_ignore_empty=True)

    provider: Literal["gemini", "openai"] | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    requests_per_minute: int = 30

    def described(self) -> str:
        """Which model judges, without its key: "openai stub-model at http://…"."""
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.provider} {self.model}{where}"


def judge_settings(
    *, provider: str | None = None, model: str | None = None, base_url: str | None = None, env_file: bool = True
) -> JudgeSettings:
    """The judge's settings: the environment (and `.env` unless `env_file` is False), flags given win."""
    flags = {k: v for k, v in {"provider": provider, "model": model, "base_url": base_url}.items() if v}
    try:
        judge = JudgeSettings(_env_file=".env" if env_file else None, **flags)  # type: ignore[call-arg]
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"JUDGE_{str(first['loc'][0]).upper()} is invalid: {first['msg']}.") from exc
    if judge.provider is None or not judge.model:
        raise ConfigError(
            "The judge needs a provider and a model: set JUDGE_PROVIDER (gemini or openai) and JUDGE_MODEL."
        )
    if judge.provider == "gemini" and judge.api_key is None:
        raise ConfigError("A Gemini judge needs JUDGE_API_KEY.")
    return judge


def build_judge(judge: JudgeSettings) -> LLM:
    """The judge's model, built as the bot builds its own, with the rubric among its prompts."""
    per_minute = {"llm_fast_requests_per_minute": judge.requests_per_minute, "llm_fast_tokens_per_minute": 0}
    if judge.provider == "openai":
        chosen = {"openai_base_url": judge.base_url, "openai_api_key": judge.api_key, "openai_model_fast": judge.model}
    else:
        chosen = {"gemini_base_url": judge.base_url, "gemini_api_key": judge.api_key, "model_fast": judge.model}
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url="sqlite+aiosqlite:///unused",  # the judge stores nothing
        llm_provider=judge.provider,
        embedding_model="none",
        **chosen,
        **per_minute,
    )
    built = build_llm(settings, sessions=None)
    prompts = {**built.prompts, **load_prompts(operations=(JUDGE,))}
    return LLM(built.primary, prompts=prompts, client=built.client)


class Judge:
    """Asks the judge about one answer at a time; counts its calls and failures."""

    def __init__(self, llm: LLM, described: str) -> None:
        self._llm = llm
        self.described = described
        self.calls = 0
        self.failed = 0

    async def rule(self, question: str, gold: str, answer: str) -> bool | None:
        """True (correct), False, or None when the judge failed (after its retries) or returned nothing usable."""
        self.calls += 1
        try:
            result = await self._llm.run(
                JUDGE,
                {"question": question, "gold_answer": gold, "answer": answer},
                schema=Verdict,
                temperature=0,
                fallback=False,
            )
        except LLMError as exc:
            self.failed += 1
            log.warning("the judge failed on one answer: %s", exc)
            return None
        if not isinstance(result.parsed, Verdict):  # a refusal: no ruling
            self.failed += 1
            return None
        return result.parsed.correct

    async def close(self) -> None:
        await self._llm.close()
