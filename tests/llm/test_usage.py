"""Every call leaves an llm_calls row with token counts, on both databases."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from bot.llm import usage
from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.prompts import load_prompts
from bot.llm.usage import UsageRecorder
from db.engine import create_engine, create_session_factory
from db.models import LlmCall
from fakes.gemini_stub import error, text
from fakes.models import stub_client
from tests.factories import GUILD
from tests.llm.test_gemini import resilient

VARS = {"subject": "Bob", "existing": "Bob is Sergey.", "max_chars": 100, "today": "2026-11-20", "timezone": "UTC"}


async def test_every_call_is_recorded_with_tokens(engine, stub):
    sessions = create_session_factory(engine)
    client = stub_client(stub.base_url)
    provider = resilient(client, attempts=1, breaker=CircuitBreaker(failures=1, cooldown=60))
    llm = LLM(provider, prompts=load_prompts(), usage=UsageRecorder(sessions))
    stub.queue(text("Bob is Sergey.", tokens_in=120, tokens_out=30), error(500))
    await llm.run("condense", VARS, guild_id=GUILD, role="batch")
    await llm.run("condense", VARS, guild_id=GUILD)  # fails, falls back offline
    await llm.run("condense", VARS, guild_id=GUILD)  # breaker open: skipped, offline
    await llm.close()  # the records are written behind the calls; closing writes what is pending
    async with sessions() as session:
        rows = (await session.scalars(select(LlmCall).order_by(LlmCall.id))).all()
    summary = [(r.provider, r.outcome, r.role, r.tokens_in, r.tokens_out, r.guild_id) for r in rows]
    assert summary[0] == ("gemini", "ok", "batch", 120, 30, GUILD)
    assert summary[1][:2] == ("gemini", "error") and summary[2][:2] == ("offline", "fallback")
    assert summary[3][:2] == ("gemini", "skipped") and summary[4][:2] == ("offline", "fallback")
    assert all(r.tokens_in > 0 for r in rows if r.provider == "offline")
    assert all(r.at.tzinfo is not None and r.operation == "condense" for r in rows)


async def test_a_failing_insert_never_fails_the_call(tmp_path, caplog):
    unmigrated = create_engine(f"sqlite+aiosqlite:///{tmp_path}/empty.db")  # no llm_calls table
    llm = LLM(None, prompts=load_prompts(), usage=UsageRecorder(create_session_factory(unmigrated)))
    result = await llm.run("condense", VARS)
    await llm.close()
    await unmigrated.dispose()
    assert result.text == "Bob is Sergey."
    [down] = [r for r in caplog.records if r.getMessage().startswith("storage down (usage rows)")]
    assert "llm_calls" in down.getMessage()  # the database's own words
    # Its traceback is the driver's: SQLAlchemy's own message would show the statement's parameters (what was said).
    assert "'offline'" not in caplog.text and "[parameters:" not in caplog.text


async def test_a_flush_waits_for_the_write_the_background_writer_has_under_way(engine, monkeypatch):
    """What `flush` returns after is in the table, whoever took it from the buffer (stats read right after a call)."""
    sessions = create_session_factory(engine)
    recorder = UsageRecorder(sessions)
    began, release = asyncio.Event(), asyncio.Event()
    real = usage.store.record

    async def held_back(session: object, rows: object) -> None:
        began.set()
        await release.wait()
        await real(session, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(usage.store, "record", held_back)
    recorder.record(operation="condense", role="batch", provider="offline", model="offline", tokens_in=3,
                    tokens_out=4, latency_s=0.0, outcome="ok", guild_id=GUILD)  # fmt: skip
    writing = asyncio.create_task(recorder.flush())  # as the background writer would
    await asyncio.wait_for(began.wait(), 30)
    second = asyncio.create_task(recorder.flush())
    await asyncio.sleep(0.05)
    assert not second.done()  # nothing left in the buffer, but the row is not written yet
    release.set()
    await asyncio.wait_for(asyncio.gather(writing, second), 30)
    async with sessions() as session:
        assert len((await session.scalars(select(LlmCall))).all()) == 1
    await recorder.close()
