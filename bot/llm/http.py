"""The HTTP session google-genai sends the bot's model calls through (the SDK's own reads proxies per request)."""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

if TYPE_CHECKING:  # the SDK costs ~0.35 s to import: only a process with a Gemini client loads it (bot/llm/build.py)
    from google import genai

GEMINI_URL = "https://generativelanguage.googleapis.com/"
READ_BUFFER_SIZE = 2**22  # the SDK's own session's
_sessions: weakref.WeakKeyDictionary[genai.Client, aiohttp.ClientSession] = weakref.WeakKeyDictionary()


def owns(client: genai.Client, session: aiohttp.ClientSession) -> None:
    """Note that `client` was given `session`, for `close_client`."""
    _sessions[client] = session


def http_session(base_url: str) -> aiohttp.ClientSession:
    """The model's HTTP session, with the environment's proxy for `base_url` (HTTP(S)_PROXY, NO_PROXY, the
    proxy's credentials from its URL or ~/.netrc) read once, when the client is made: a later change of the
    environment needs a restart.

    The SDK's own session (`trust_env`) read the proxy settings before every request, in a thread: a hop to the
    default executor and back on every model call, ~0.6 ms of a call with the model at 0 ms and more on a busy
    event loop, which a reply waits for. (It also sent ~/.netrc's credentials for the model's own host, which
    an API key makes needless.)
    """
    proxy: URL | None = None
    with contextlib.suppress(LookupError):  # LookupError: no proxy for this URL
        proxy, auth = get_env_proxy_for_url(URL(base_url))
        if auth is not None:  # in the URL: aiohttp 3.14 deprecates `proxy_auth`
            proxy = proxy.with_user(auth.login).with_password(auth.password)
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),  # the SDK's: our own limits cap concurrency
        proxy=proxy,
        read_bufsize=READ_BUFFER_SIZE,
    )


async def close_client(client: Any) -> None:
    """Close a client from `make_client`: the SDK's connections, then our HTTP session (the SDK leaves one it was
    given open); or an `openai` client (`make_openai_client`), which owns its connections."""
    sdk = sys.modules.get("google.genai")  # not loaded: the client cannot be one of its own
    if sdk is None or not isinstance(client, sdk.Client):
        await client.close()
        return
    try:
        await client.aio.aclose()
    finally:
        if (session := _sessions.pop(client, None)) is not None:
            await session.close()
