"""The HTTP session model calls go through: the environment's proxy read once, not in a thread per request."""

from __future__ import annotations

import aiohttp.client
import pytest

from bot.llm import build_llm
from tests.gemini_stub import GeminiStub
from tests.llm.test_lanes import CONDENSE, settings_for


async def test_model_calls_do_not_read_the_proxy_settings_each_time(stub, monkeypatch):
    """The SDK's own session looked the proxy up before every request, in the default executor: a thread hop a
    reply waited for (~0.6 ms a call with the model at 0 ms, more on a busy event loop)."""
    lookups: list[str] = []
    lookup = aiohttp.client.get_env_proxy_for_url

    def counting(url):  # type: ignore[no-untyped-def]
        lookups.append(str(url))
        return lookup(url)

    monkeypatch.setattr(aiohttp.client, "get_env_proxy_for_url", counting)
    llm = build_llm(settings_for(stub.base_url), sessions=None)
    try:
        for _ in range(3):
            await llm.run("condense", CONDENSE, role="batch", fallback=False)
    finally:
        await llm.close()
    assert len(stub.requests) == 3 and lookups == []


@pytest.mark.parametrize("excluded", [False, True])
async def test_the_environments_proxy_carries_model_calls_unless_no_proxy_excludes_the_host(monkeypatch, excluded):
    """HTTP(S)_PROXY and NO_PROXY as the SDK's own session honoured them: here the "proxy" is the stub, and the
    model's host does not exist, so only a call through the proxy is answered."""
    proxy = await GeminiStub().start()
    monkeypatch.setenv("HTTP_PROXY", proxy.base_url)
    monkeypatch.setenv("NO_PROXY", "gemini.invalid" if excluded else "localhost")
    llm = build_llm(settings_for("http://gemini.invalid", llm_max_attempts=1), sessions=None)
    try:
        result = await llm.run("condense", CONDENSE, role="batch")
    finally:
        await llm.close()
        await proxy.stop()
    assert result.degraded is excluded  # excluded: the host is looked up directly, fails, and memory answers
    assert len(proxy.requests) == (0 if excluded else 1)
