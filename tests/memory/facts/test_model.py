"""The facts track through the real LLM client: the offline provider, and Gemini (stub) over HTTP."""

from __future__ import annotations

import json

import pytest

from bot.memory.facts.model import LLMFactsModel
from bot.memory.facts.store import FactsStore
from db.engine import create_session_factory
from fakes.gemini_stub import StubRequest
from fakes.model_doubles import scripted_model
from tests.factories import ALICE, BOB, GUILD


@pytest.fixture
def store(engine, llm):
    return FactsStore(create_session_factory(engine), LLMFactsModel(llm), max_chars=400)


async def test_remember_forget_and_not_found(store):
    await store.remember(GUILD, BOB, "Bob is Sergey", requested_by=ALICE, subject="Bob")
    await store.remember(GUILD, BOB, "Bob likes green tea", requested_by=ALICE, subject="Bob")
    assert await store.facts(GUILD, BOB) == "Bob is Sergey. Bob likes green tea."
    missing = await store.forget(GUILD, BOB, "Bob owns a boat", requested_by=ALICE, subject="Bob")
    assert not missing.found and await store.facts(GUILD, BOB) == "Bob is Sergey. Bob likes green tea."
    found = await store.forget(GUILD, BOB, "Bob likes green tea", requested_by=ALICE, subject="Bob")
    assert found.found and await store.facts(GUILD, BOB) == "Bob is Sergey."
    assert [r.op for r in await store.history(GUILD, BOB)] == ["forget", "remember", "remember"]


async def test_the_cap_holds_after_200_remembers(store):
    for i in range(200):
        await store.remember(GUILD, BOB, f"Bob visited city number {i}", requested_by=ALICE, subject="Bob")
    blob = await store.facts(GUILD, BOB) or ""
    assert 0 < len(blob) <= 400 and "city number 199." in blob
    assert len(await store.history(GUILD, BOB, limit=500)) == 200


def test_stub_answers_are_json_where_parsed():
    reply = scripted_model(
        StubRequest(
            "m",
            {
                "contents": [
                    {"parts": [{"text": "<existing_facts>Ana likes tea.</existing_facts><forget>likes tea</forget>"}]}
                ]
            },
            None,
        )
    )
    assert json.loads(reply.text) == {"found": True, "memory": ""}


async def test_twenty_concurrent_remembers_keep_all_twenty(engine, llm):
    import asyncio

    store = FactsStore(create_session_factory(engine), LLMFactsModel(llm), max_chars=5000)
    await asyncio.gather(
        *(store.remember(GUILD, BOB, f"Bob has hobby number {i}", requested_by=ALICE, subject="Bob") for i in range(20))
    )
    blob = await store.facts(GUILD, BOB) or ""
    assert all(f"hobby number {i}." in blob for i in range(20))
    assert len(await store.history(GUILD, BOB, limit=100)) == 20
