"""A start-up look at the configured models: a refused key stops start-up, a retired model id or no network warns.

For Gemini here; an OpenAI-compatible endpoint's checks, by the same rule, are in bot/llm/openai_probe.py.

Nothing else at start-up talks to Gemini, so without this a wrong GEMINI_API_KEY or a retired MODEL_BATCH would
first show as fallbacks hours later (at the first daily summary). The bot runs without a model, so only a
refused key (a setting that cannot work) stops it; everything else is one warning naming the setting.
"""

from __future__ import annotations

import asyncio
import logging

from google import genai
from google.genai import errors
from google.genai import types as genai_types

from bot.llm.build import make_client
from bot.llm.http import close_client
from bot.llm.resilience import NETWORK_ERRORS, describe
from bot.settings import ConfigError, Settings

log = logging.getLogger(__name__)
PROBE_SECONDS = 5.0
KEYS_PAGE = "https://aistudio.google.com/apikey"


def _refused_key(exc: errors.APIError) -> bool:
    text = f"{exc.status} {exc.message}".upper()
    return exc.code in {401, 403} or (exc.code == 400 and ("API KEY" in text or "API_KEY" in text))


async def _look(client: genai.Client, setting: str, model: str) -> None:
    options = genai_types.HttpOptions(timeout=int(PROBE_SECONDS * 1000))
    try:
        async with asyncio.timeout(PROBE_SECONDS):
            await client.aio.models.get(model=model, config=genai_types.GetModelConfig(http_options=options))
    except errors.APIError as exc:
        if _refused_key(exc):
            raise ConfigError(
                f"Google refused GEMINI_API_KEY ({describe(exc)}): create a key at {KEYS_PAGE}, "
                "or leave GEMINI_API_KEY empty to run without a model."
            ) from exc
        if exc.code == 404:
            log.warning(
                "%s=%s is not served by the Gemini API (%s): choose a current model id (see .env.example); "
                "offline answers stand in for it meanwhile",
                setting,
                model,
                describe(exc),
            )
        else:
            log.warning("%s=%s could not be checked (%s); starting anyway", setting, model, describe(exc))
    except NETWORK_ERRORS as exc:
        log.warning(
            "the Gemini API is unreachable for %s=%s (%s); answers come from memory until it responds",
            setting,
            model,
            describe(exc, PROBE_SECONDS),
        )


async def check_models(settings: Settings) -> None:
    """Ask the provider about each configured model, at once; raises ConfigError for a setting that cannot work."""
    if settings.provider == "openai":
        from bot.llm.openai_probe import check_endpoint  # the openai package only when it is the provider

        await check_endpoint(settings)
        return
    if settings.provider != "gemini":
        return
    models = dict(settings.model_settings)
    if settings.embedding_model and settings.embedding_model.strip().lower() not in {"local", "none", "off"}:
        models["EMBEDDING_MODEL"] = settings.embedding_model  # a Gemini model (the local one needs no asking)
    client = make_client(settings)
    try:
        results = await asyncio.gather(
            *(_look(client, setting, model) for setting, model in models.items()), return_exceptions=True
        )
    finally:
        await close_client(client)
    for result in results:
        if isinstance(result, BaseException):
            raise result
