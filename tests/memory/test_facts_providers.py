"""The facts track through the real LLM client: the offline provider, and Gemini (stub) over HTTP."""

from __future__ import annotations

import json
import re

import pytest
from google import genai
from google.genai import types

from bot.llm.client import LLM
from bot.llm.offline import OfflineProvider
from bot.llm.prompts import load_prompts
from bot.memory.facts import FactsStore
from bot.memory.facts_llm import LLMFactsModel
from db.engine import create_session_factory
from tests.factories import ALICE, BOB, GUILD
from tests.gemini_stub import GeminiStub, Reply, StubRequest, as_json, text
from tests.llm.test_gemini import resilient


def _element(prompt: str, name: str) -> str:
    match = re.search(rf"<{name}>(.*?)</{name}>", prompt, re.S)
    return match.group(1) if match else ""


def merging_model(request: StubRequest) -> Reply:
    """The model's wording is the edge we fake: merge by appending, forget by sentence, condense by halving."""
    prompt = request.prompt_text
    if "<new_fact>" in prompt:
        existing, fact = _element(prompt, "existing_facts"), _element(prompt, "new_fact")
        return text(f"{existing} {fact.rstrip('.')}.".strip())
    if "<forget>" in prompt:
        existing, fact = _element(prompt, "existing_facts"), _element(prompt, "forget")
        kept = [s for s in re.split(r"(?<=\.)\s+", existing) if fact.rstrip(".") not in s]
        found = len(kept) != len(re.split(r"(?<=\.)\s+", existing))
        return as_json({"found": found, "memory": " ".join(kept) if found else existing})
    facts = _element(prompt, "facts")
    return text(facts[len(facts) // 2:])


@pytest.fixture(params=["offline", "gemini-stub"])
async def llm(request):
    if request.param == "offline":
        yield LLM(None, prompts=load_prompts())
        return
    stub = await GeminiStub(responder=merging_model).start()
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stub.base_url))
    yield LLM(resilient(client), prompts=load_prompts(), offline=_Refuse())
    await client.aio.aclose()
    await stub.stop()


class _Refuse(OfflineProvider):
    """With the stub, a silent fallback would hide a broken Gemini path: fail loudly instead."""

    async def generate(self, **kw):
        raise AssertionError(f"fell back offline for {kw['operation']}")


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
    reply = merging_model(StubRequest("m", {"contents": [{"parts": [{"text": "<existing_facts>A.</existing_facts>"
                                                                             "<forget>A</forget>"}]}]}, None))
    assert json.loads(reply.text) == {"found": True, "memory": ""}
