"""Fixtures: the Gemini stub server, and the real google-genai client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from google import genai
from google.genai import types

from fakes.gemini_stub import GeminiStub


@pytest.fixture
async def stub() -> AsyncIterator[GeminiStub]:
    server = await GeminiStub().start()
    yield server
    await server.stop()


@pytest.fixture
async def genai_client(stub: GeminiStub) -> AsyncIterator[genai.Client]:
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=stub.base_url))
    yield client
    await client.aio.aclose()
