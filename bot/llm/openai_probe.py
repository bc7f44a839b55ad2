"""A start-up look at an OpenAI-compatible endpoint, by the Gemini probe's rule (bot/llm/probe.py).

A setting that cannot work stops start-up with one sentence: a refused OPENAI_API_KEY, or a server that takes
neither a JSON schema nor JSON mode (routing, forgetting and summaries need structured output). Everything else
is one warning naming the setting, and the bot starts (offline answers stand in): an endpoint that does not
answer, a model it does not serve, a check that could not finish.

Each configured model is asked one tiny structured question, so what is checked is what the bot will send: a
server that ignores model names (llama.cpp's serves whatever it loaded) passes, and Ollama loads the model now
rather than at the first reply.
"""

from __future__ import annotations

import asyncio
import logging

import openai
from pydantic import BaseModel
from yarl import URL

from bot.llm.openai_compat import (
    JSON_MODE,
    OPENAI_URL,
    SCHEMA_REFUSED,
    OpenAIProvider,
    endpoint_error,
    make_openai_client,
    schema_format,
)
from bot.llm.resilience import describe
from bot.llm.structured import json_instructions
from bot.llm.types import EndpointError, EndpointUnreachableError, Prompt
from bot.settings import ConfigError, Settings

log = logging.getLogger(__name__)
PROBE_SECONDS = 5.0  # listing the models; a question gets LLM_TIMEOUT_SECONDS (a local server may load the model)
HINTS = 8  # served models named in a warning


class Check(BaseModel):
    """The structured answer the probe asks for."""

    ok: bool


QUESTION = Prompt(system="You answer with JSON.", user='Answer with the JSON object {"ok": true}.')


class EndpointProbe:
    """The checks of one endpoint, with one client."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client = make_openai_client(settings)
        self.url = _shown(settings.openai_base_url or OPENAI_URL)
        self.where = f"the endpoint at OPENAI_BASE_URL ({self.url})"

    def refused_key(self, exc: BaseException) -> ConfigError:
        """The sentence for a 401 or 403."""
        if self.settings.openai_api_key is None:
            return ConfigError(
                f"The endpoint at OPENAI_BASE_URL ({self.url}) needs a key ({describe(exc)}): set OPENAI_API_KEY."
            )
        return ConfigError(
            f"The endpoint at OPENAI_BASE_URL ({self.url}) refused OPENAI_API_KEY ({describe(exc)}): set the key the "
            "server expects, or leave OPENAI_API_KEY empty for a local server that needs none."
        )

    async def served(self) -> list[str] | None:
        """The model ids the endpoint lists ([] when it cannot list them), or None when it does not answer."""
        try:
            async with asyncio.timeout(PROBE_SECONDS):
                page = await self.client.with_options(timeout=PROBE_SECONDS).models.list()
        except openai.APIStatusError as exc:
            # A refused key too: the question to each model says so (OpenRouter lists its models to anyone).
            log.debug("%s lists no models (%s)", self.where, describe(endpoint_error(exc)))
            return []
        except (openai.APIConnectionError, TimeoutError) as exc:
            cause = endpoint_error(exc) if isinstance(exc, openai.APIError) else exc
            log.warning(
                "%s is unreachable (%s); answers come from memory until it responds",
                self.where,
                describe(cause, PROBE_SECONDS),
            )
            return None
        return sorted(model.id for model in page.data)

    async def ask(self, setting: str, model: str, served: list[str]) -> None:
        """One structured question to `model`: as a JSON schema, else in JSON mode, else a ConfigError."""
        provider = OpenAIProvider(self.client, models={"batch": model, "fast": model})
        try:
            try:
                async with asyncio.timeout(self.settings.llm_timeout_seconds):
                    await provider.create(model, QUESTION, response_format=schema_format(Check))
                return
            except EndpointError as exc:
                if exc.status not in SCHEMA_REFUSED:
                    raise
                log.debug("%s=%s refused a JSON schema (%s); trying JSON mode", setting, model, describe(exc))
            instructed = Prompt(system=f"{QUESTION.system}\n\n{json_instructions(Check)}", user=QUESTION.user)
            try:
                async with asyncio.timeout(self.settings.llm_timeout_seconds):
                    await provider.create(model, instructed, response_format=JSON_MODE)
            except EndpointError as exc:
                if exc.status not in SCHEMA_REFUSED:
                    raise
                raise ConfigError(
                    f"The endpoint at OPENAI_BASE_URL ({self.url}) takes neither a JSON schema nor JSON mode for "
                    f"{setting}={model} ({describe(exc)}): Elefant needs structured output to route messages, "
                    "forget and summarise; serve the model with Ollama, llama.cpp's server or vLLM, or choose another."
                ) from exc
            log.info(
                "%s=%s takes JSON mode but not a JSON schema: replies are checked against the schema", setting, model
            )
        except EndpointError as exc:
            self._warn(setting, model, exc, served)
        except (TimeoutError, EndpointUnreachableError) as exc:
            log.warning(
                "%s=%s did not answer a first question at %s (%s); starting anyway",
                setting,
                model,
                self.url,
                describe(exc, self.settings.llm_timeout_seconds),
            )

    def _warn(self, setting: str, model: str, exc: EndpointError, served: list[str]) -> None:
        if exc.status in {401, 403}:
            raise self.refused_key(exc) from exc
        if exc.status == 404:
            others = f"; it serves {', '.join(served[:HINTS])}{' …' if len(served) > HINTS else ''}" if served else ""
            log.warning(
                "%s=%s is not served by %s (%s%s): pull or choose a model it serves; offline answers stand in for it "
                "meanwhile",
                setting,
                model,
                self.where,
                describe(exc),
                others,
            )
            return
        log.warning("%s=%s could not be checked (%s); starting anyway", setting, model, describe(exc))


def _shown(url: str) -> str:
    """A URL as logs may show it: without a user or password."""
    return str(URL(url).with_user(None))


async def check_endpoint(settings: Settings) -> None:
    """Look at the endpoint and each configured model, at once; raises ConfigError for a setting that cannot work."""
    probe = EndpointProbe(settings)
    try:
        served = await probe.served()
        if served is None:
            return
        models: dict[str, str] = {}
        for setting, model in reversed(settings.model_settings.items()):
            models.setdefault(model, setting)  # one question per model, named by OPENAI_MODEL_FAST when both share it
        results = await asyncio.gather(
            *(probe.ask(setting, model, served) for model, setting in models.items()), return_exceptions=True
        )
    finally:
        await probe.client.close()
    for result in results:
        if isinstance(result, BaseException):
            raise result
