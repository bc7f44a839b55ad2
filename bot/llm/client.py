"""The LLM client the memory layer uses: render the prompt, ask the model, fall back offline, account."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from bot.llm.http import close_client
from bot.llm.offline import OFFLINE_REASON, OfflineProvider
from bot.llm.prompts import PromptTemplate
from bot.llm.types import Call, LLMError, LLMResult, LLMUnavailableError, Provider, Role
from bot.llm.usage import UsageRecorder

log = logging.getLogger(__name__)


class LLM:
    """`run(operation, variables)`: the primary provider when it answers, else the offline provider."""

    def __init__(
        self,
        primary: Provider | None,
        *,
        prompts: Mapping[str, PromptTemplate],
        usage: UsageRecorder | None = None,
        offline: Provider | None = None,
        client: Any = None,
    ) -> None:
        self.primary = primary
        self.prompts = prompts
        self._usage = usage
        self._offline = offline or OfflineProvider()
        self._client = client  # the SDK client behind the primary provider (google-genai or openai), closed by close()

    @property
    def is_offline(self) -> bool:
        """True when no model is configured (everything is answered deterministically)."""
        return self.primary is None

    def version(self, operation: str) -> str:
        """The prompt version, stored with what the prompt produced."""
        return self.prompts[operation].version

    async def run(
        self,
        operation: str,
        variables: Mapping[str, Any],
        *,
        schema: type[BaseModel] | None = None,
        role: Role = "fast",
        temperature: float = 0.7,
        guild_id: int | None = None,
        fallback: bool = True,
    ) -> LLMResult:
        """Answer `operation`; with `fallback=False` a model failure raises LLMError instead."""
        prompt = self.prompts[operation].render(variables)
        call = Call(operation, prompt, variables, schema, temperature, role)
        if self.primary is not None:
            started = time.perf_counter()
            try:
                result = await self.primary.generate(call)
            except LLMUnavailableError:
                self._record_result(self._nothing(started), operation, role, guild_id, "skipped")
                if not fallback:
                    raise
            except LLMError as exc:
                # The cause is logged once per breaker transition (bot/llm/breaker.py), not once per call.
                log.debug("%s failed (%s); %s", operation, exc, "answering offline" if fallback else "giving up")
                self._record_result(self._nothing(started), operation, role, guild_id, "error")
                if not fallback:
                    raise
            else:
                self._record_result(result, operation, role, guild_id, "ok")
                return result
            # The offline answer says why it is answering: a model is configured but failing.
            call = dataclasses.replace(call, variables={**variables, OFFLINE_REASON: "failing"})
        result = await self._offline.generate(call)
        self._record_result(result, operation, role, guild_id, "fallback" if self.primary else "ok")
        return dataclasses.replace(result, degraded=self.primary is not None)

    def _nothing(self, started: float) -> LLMResult:
        name = self.primary.name if self.primary else "none"
        return LLMResult("", None, 0, 0, "", time.perf_counter() - started, name)

    @property
    def usage(self) -> UsageRecorder | None:
        """Where calls are accounted (embeddings use it too)."""
        return self._usage

    @property
    def client(self) -> Any:
        """The SDK client behind the primary provider (google-genai's or openai's), or None (offline)."""
        return self._client

    async def flush_usage(self) -> None:
        """Write the pending usage records now (they are written in the background otherwise)."""
        if self._usage is not None:
            await self._usage.flush()

    async def close(self) -> None:
        """Write pending usage records, then close the HTTP client behind the primary provider, if any."""
        if self._usage is not None:
            await self._usage.close()
        if self._client is not None:
            await close_client(self._client)

    def _record_result(self, result: LLMResult, operation: str, role: str, guild_id: int | None, outcome: str) -> None:
        if self._usage is not None:
            self._usage.record(
                operation=operation,
                role=role,
                provider=result.provider,
                model=result.model,
                tokens_in=result.tokens_in,
                tokens_out=result.tokens_out,
                latency_s=result.latency_s,
                outcome=outcome,
                guild_id=guild_id,
            )
