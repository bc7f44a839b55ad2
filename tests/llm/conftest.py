"""Fixtures: the Gemini stub server and the real google-genai client pointed at it; the OpenAI-compatible stub."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from google import genai

from fakes.gemini_stub import GeminiStub
from fakes.models import stub_client
from fakes.openai_stub import OpenAIStub


@pytest.fixture
async def stub() -> AsyncIterator[GeminiStub]:
    server = await GeminiStub().start()
    yield server
    await server.stop()


@pytest.fixture
async def genai_client(stub: GeminiStub) -> AsyncIterator[genai.Client]:
    client = stub_client(stub.base_url)
    yield client
    await client.aio.aclose()


@pytest.fixture
async def openai_stub() -> AsyncIterator[OpenAIStub]:
    """The OpenAI-compatible stub (answers "stub answer" unless told otherwise)."""
    server = await OpenAIStub().start()
    yield server
    await server.stop()
