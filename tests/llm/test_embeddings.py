"""Embeddings as generate calls are treated: the model's own lane (limits, retries, breaker) and llm_calls rows.

Also: EMBEDDING_DIMENSIONS takes what the API takes, and vectors of another dimension are never reused.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from bot.llm import build_embedder, build_llm
from bot.llm.breaker import State
from bot.llm.prompts import when
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.settings import ConfigError, load_settings
from db.engine import create_session_factory
from db.models import LlmCall
from fakes.gemini_stub import error, text
from tests.factories import ALICE, GUILD, message
from tests.llm.test_lanes import fast_retries, settings_for

WHEN = {"today": "Friday 2026-11-20 12:00", "timezone": "UTC"}


def unit(text_: str) -> list[float]:
    return [1.0, float(len(text_) % 3), 0.5]


@pytest.fixture
def embedding_stub(stub):
    stub.embedder = unit
    return stub


async def test_embeddings_are_retried_limited_and_accounted(engine, embedding_stub):
    settings = settings_for(embedding_stub.base_url, embedding_model="gemini-embedding-001", llm_max_attempts=3)
    llm = build_llm(settings, sessions=create_session_factory(engine))
    fast_retries(llm)
    embedder = build_embedder(settings, llm)
    assert embedder is not None and embedder.model == "gemini-embedding-001@256"
    embedding_stub.embed_replies.extend([error(503), error(429, retry_delay="0.05s")])
    try:
        vectors = await embedder.embed(["exam on friday", "lease signed"], task="RETRIEVAL_DOCUMENT")
    finally:
        await llm.close()  # writes the pending usage rows
    assert vectors == [unit("exam on friday"), unit("lease signed")]
    assert len(embedding_stub.embedded) == 3  # two transient failures retried by the lane
    async with create_session_factory(engine)() as session:
        rows = (await session.scalars(select(LlmCall).where(LlmCall.operation == "embed"))).all()
    assert [(r.role, r.model, r.outcome) for r in rows] == [("embed", "gemini-embedding-001", "ok")]
    assert rows[0].tokens_in > 0


async def test_a_failing_embedding_model_opens_only_its_own_breaker(embedding_stub):
    settings = settings_for(
        embedding_stub.base_url, embedding_model="gemini-embedding-001", llm_max_attempts=1, llm_breaker_failures=2
    )
    llm = build_llm(settings, sessions=None)
    embedder = build_embedder(settings, llm)
    assert embedder is not None
    embedding_stub.embed_replies.extend([error(500), error(500)])
    embedding_stub.queue(text("still fine"))
    try:
        for _ in range(2):
            with pytest.raises(Exception, match="500"):
                await embedder.embed(["x"], task="RETRIEVAL_QUERY")
        with pytest.raises(Exception, match="cool-down"):
            await embedder.embed(["x"], task="RETRIEVAL_QUERY")
        assert len(embedding_stub.embedded) == 2
        chat = await llm.run("condense", {"subject": "B", "existing": "x", "max_chars": 10, **WHEN})
    finally:
        await llm.close()
    assert chat.text == "still fine" and not chat.degraded
    assert llm.primary.lanes["gemini-embedding-001"].breaker.state is State.OPEN


@pytest.mark.parametrize(("value", "ok"), [("127", False), ("128", True), ("3072", True), ("3073", False)])
def test_embedding_dimensions_take_what_the_api_takes(monkeypatch, tmp_path, value, ok):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBEDDING_DIMENSIONS", value)
    if ok:
        assert load_settings().embedding_dimensions == int(value)
    else:
        with pytest.raises(ConfigError, match="Setting EMBEDDING_DIMENSIONS is invalid"):
            load_settings()


async def test_vectors_of_another_dimension_are_never_compared(engine, embedding_stub):
    made = []
    for dimensions in (256, 768, 256):
        settings = settings_for(
            embedding_stub.base_url, embedding_model="gemini-embedding-001", embedding_dimensions=dimensions
        )
        llm = build_llm(settings, sessions=None)
        memory = MemoryManager(engine, settings, llm=llm, embedder=build_embedder(settings, llm))
        await memory.start()
        made.append((memory, llm))
        assert memory.embedding is not None and memory.vectors is not None
        await memory.embedding.idle()  # the stored message without a vector of this model and dimension
        await memory.flush()
        if dimensions == 256 and len(made) == 1:
            await memory.intake.message(message("the same text", author=ALICE))
            await memory.flush()
            await memory.embedding.idle()
            await memory.flush()
    for memory, llm in made:
        await memory.close()
        await llm.close()
    # 256 embeds; 768 must embed again (a 256-d vector is no 768-d one); a message keeps one vector, of the model
    # in use, so going back to 256 embeds it once more rather than comparing vectors of different models.
    assert len(embedding_stub.embedded) == 3


async def test_facts_prompts_state_the_guilds_own_time_zone(engine, settings, stub):
    clock = FakeClock(datetime(2026, 11, 20, 20, 30, tzinfo=UTC))  # already Saturday in Tokyo
    llm = build_llm(settings_for(stub.base_url), sessions=None)
    memory = MemoryManager(engine, settings, llm=llm, clock=clock)
    await memory.start()
    try:
        await memory.intake.message(message("hi", author=ALICE, name="Ana"))
        await memory.flush()
        await memory.admin.set_timezone(GUILD, "Asia/Tokyo")
        stub.responder = lambda request: text("Ana likes tea.")
        await memory.facts.remember(GUILD, ALICE, "Ana likes tea", requested_by=ALICE)
    finally:
        await memory.close()
        await llm.close()
    [sent] = [r for r in stub.requests if "<new_fact>" in r.prompt_text]
    tokyo = when(clock.now(), "Asia/Tokyo")
    assert tokyo["today"].startswith("Saturday 2026-11-21") and tokyo["today"] in sent.prompt_text
    assert "Asia/Tokyo" in sent.prompt_text
