"""The HTTP session model calls go through: the environment's proxy read once, not in a thread per request."""

from __future__ import annotations

import base64

import aiohttp.client
import pytest

import bot.app
import bot.llm.build
from bot.app import open_app
from bot.llm import build_llm
from fakes.gemini_stub import GeminiStub
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


async def test_the_proxys_credentials_from_its_url_are_sent_to_it(monkeypatch):
    proxy = await GeminiStub().start()
    monkeypatch.setenv("HTTP_PROXY", proxy.base_url.replace("http://", "http://ana:s3cret@"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    llm = build_llm(settings_for("http://gemini.invalid", llm_max_attempts=1), sessions=None)
    try:
        await llm.run("condense", CONDENSE, role="batch", fallback=False)
    finally:
        await llm.close()
        await proxy.stop()
    assert proxy.requests[0].proxy_authorization == "Basic " + base64.b64encode(b"ana:s3cret").decode()


async def test_a_start_up_that_fails_after_the_client_is_made_closes_its_http_session(tmp_path, monkeypatch):
    """The session is ours from the start (the SDK made its own at the first request): a failure before the bot
    runs must not leave it open ("Unclosed client session" after the one-sentence error)."""
    made: list[aiohttp.ClientSession] = []
    make = bot.llm.build.http_session

    def recording(base_url: str) -> aiohttp.ClientSession:
        made.append(make(base_url))
        return made[-1]

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the embedder could not be built")

    monkeypatch.setattr(bot.llm.build, "http_session", recording)
    monkeypatch.setattr(bot.app, "build_embedder", failing)
    settings = settings_for("http://127.0.0.1:9", database_url=f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(RuntimeError, match="embedder"):
        async with open_app(settings):
            pass
    assert len(made) == 1 and made[0].closed
