"""The HTTP session google-genai sends the bot's model calls through (the SDK's own reads proxies per request)."""

from __future__ import annotations

import weakref

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from google import genai
from yarl import URL

GEMINI_URL = "https://generativelanguage.googleapis.com/"
READ_BUFFER_SIZE = 2**22  # the SDK's own session's
_sessions: weakref.WeakKeyDictionary[genai.Client, aiohttp.ClientSession] = weakref.WeakKeyDictionary()


def owns(client: genai.Client, session: aiohttp.ClientSession) -> None:
    """Note that `client` was given `session`, for `close_client`."""
    _sessions[client] = session


def http_session(base_url: str) -> aiohttp.ClientSession:
    """The model's HTTP session, with the environment's proxy for `base_url` (HTTPS_PROXY, NO_PROXY …) read once.

    The SDK's own session reads the proxy settings before every request, in a thread (`trust_env`): a hop to the
    default executor and back on every model call, ~0.6 ms of a call with the model at 0 ms and more on a busy
    event loop, which a reply waits for.
    """
    try:
        proxy, proxy_auth = get_env_proxy_for_url(URL(base_url))
    except LookupError:  # no proxy for this URL
        proxy, proxy_auth = None, None
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),  # the SDK's: our own limits cap concurrency
        proxy=proxy,
        proxy_auth=proxy_auth,
        read_bufsize=READ_BUFFER_SIZE,
    )


async def close_client(client: genai.Client) -> None:
    """Close a client from `make_client`: the SDK's connections, then our HTTP session (the SDK leaves one it was
    given open)."""
    await client.aio.aclose()
    if (session := _sessions.pop(client, None)) is not None:
        await session.close()
