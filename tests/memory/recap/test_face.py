"""Recaps from memory on both databases: the default span and what overrides it, the read scope, the budget, the
days' summaries, one model call per recap (counted in llm_calls, offline and with the stub), and every change —
here or in another process — dropping the recaps kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from bot.llm.client import LLM
from bot.llm.recap import threads_xml
from bot.llm.tokens import estimate_tokens
from bot.llm.usage import UsageRecorder
from bot.memory import coherence
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.recap.face import RecapAsk
from bot.memory.recap.material import Material
from db.engine import create_engine, create_session_factory
from db.models import LlmCall
from fakes.gemini_stub import GeminiStub
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from tests.factories import GUILD
from tests.recap_day import ANA, BOB, CY, DEE, EVENTS, GENERAL, MORNING, NOW, SECRET, a_day, say


@pytest.fixture(params=["offline", "stub"])
async def llm(request, engine) -> AsyncIterator[LLM]:
    """The model stack with its calls counted in llm_calls: offline, and the real client against the stub."""
    usage = UsageRecorder(create_session_factory(engine))
    if request.param == "offline":
        made = model_stack(usage=usage)
        yield made
        await made.close()
        return
    stub = await GeminiStub(responder=scripted_model).start()
    made = model_stack(stub.base_url, usage=usage)
    yield made
    await made.close()
    await stub.stop()


async def started(engine, settings, llm: LLM | None = None, **overrides) -> MemoryManager:
    settings = settings.model_copy(update=overrides)
    memory = MemoryManager(engine, settings, llm=llm or model_stack(), clock=FakeClock(NOW))
    await memory.start()
    await memory.intake.channel(GUILD, SECRET, is_private=True)
    return memory


@pytest.fixture
async def memory(engine, settings) -> AsyncIterator[MemoryManager]:
    memory = await started(engine, settings)
    yield memory
    await memory.close()


def ask(text: str, *, here: int | None = GENERAL, who: int = ANA) -> RecapAsk:
    return RecapAsk(GUILD, who, text, here)


def shown(made: Material) -> str:
    return "\n".join(line.content for thread in made.threads for line in thread.lines)


async def test_the_span_defaults_to_since_the_asker_last_spoke_and_a_named_time_or_channel_overrides(memory):
    ids = await a_day(memory)
    missed = await memory.recollection.gather_recap(ask("what did I miss?"))
    assert (missed.channel_id, missed.chosen, missed.since) == (None, "server", MORNING + timedelta(microseconds=1))
    assert "pizza" not in shown(missed) and "morning all" not in shown(missed)  # before she left, and her own
    assert all(thread in shown(missed) for thread in ("tournament", "bake sale", "migration"))
    assert ids["secret"] not in missed.quoted  # the private channel's talk is not readable from #general

    # A channel she never spoke in: since she last spoke in the server.
    events = await memory.recollection.gather_recap(ask(f"catch me up on <#{EVENTS}>"))
    assert (events.channel_id, events.chosen, events.since) == (EVENTS, "server", missed.since)
    assert "bake sale" in shown(events) and "tournament" not in shown(events)

    here = await memory.recollection.gather_recap(ask("what happened here since 14:00?"))
    assert (here.channel_id, here.chosen, here.since) == (GENERAL, "named", NOW.replace(hour=14))
    assert "migration" in shown(here) and "tournament" not in shown(here)

    # Who never spoke: the longest span a recap covers; and a named span is cut to it, saying so.
    newcomer = await memory.recollection.gather_recap(ask("what did I miss?", who=2**60 + 9999))
    assert (newcomer.chosen, newcomer.since, newcomer.capped) == ("longest", NOW - timedelta(days=7), False)
    old = await memory.recollection.gather_recap(ask("catch me up since 2026-10-01"))
    assert (old.since, old.capped) == (NOW - timedelta(days=7), True)


async def test_a_private_channels_talk_is_in_its_own_recap_only(memory):
    ids = await a_day(memory)
    for asked in ("what did I miss?", f"catch me up on <#{SECRET}>", "what happened today?"):
        public = await memory.recollection.gather_recap(ask(asked))
        assert "surprise" not in shown(public) and ids["secret"] not in public.quoted
        phrased = await memory.recollection.phrase_recap(public)
        assert "surprise" not in phrased.recap.model_dump_json()
    own = await memory.recollection.gather_recap(ask("what happened here today?", here=SECRET))
    assert "surprise party" in shown(own) and ids["secret"] in own.quoted
    assert "tournament" not in shown(own)  # "here" is the private channel alone
    anywhere = await memory.recollection.gather_recap(ask("what happened today?", here=SECRET))
    assert "surprise party" in shown(anywhere) and "tournament" in shown(anywhere)


async def test_a_topic_keeps_to_the_threads_about_it(memory):
    await a_day(memory)
    made = await memory.recollection.gather_recap(ask("what did we decide about the tournament?"))
    assert made.topic == ("tournament",) and len(made.threads) == 1
    assert "decided: the tournament starts at ten" in shown(made)
    none = await memory.recollection.gather_recap(ask("what did we decide about the volcano?"))
    assert none.empty


async def test_never_more_than_the_budget_and_every_thread_keeps_its_central_messages(engine, settings):
    memory = await started(engine, settings, recap_token_budget=300)
    try:
        for i in range(60):
            await say(memory, MORNING + timedelta(minutes=i), (BOB, CY)[i % 2], f"tournament bracket talk {i} " * 3)
            await say(memory, MORNING + timedelta(minutes=i, seconds=30), DEE, f"ramen place miso soup bowl {i} " * 3)
        await memory.flush()
        made = await memory.recollection.gather_recap(ask("what happened today?"))
    finally:
        await memory.close()
    assert made.said == 120 and len(made.threads) == 2
    assert estimate_tokens(threads_xml(made.threads)) <= 300 < made.raw_tokens
    assert all(any(line.key for line in thread.lines) for thread in made.threads)


async def test_past_days_bring_their_summaries_to_a_server_recap(memory):
    yesterday = NOW - timedelta(days=1)
    await say(memory, yesterday.replace(hour=10), BOB, "the climbing gym opens a new bouldering wall")
    await say(memory, NOW.replace(hour=10), CY, "today the ramen place was closed")
    await memory.flush()
    assert memory.summaries is not None
    await memory.summaries.past_day(GUILD, yesterday.date())
    server = await memory.recollection.gather_recap(ask("catch me up since yesterday"))
    assert [(d.day, d.author) for d in server.days] == [(yesterday.date(), "Bob")]
    assert "bouldering" in server.days[0].summary
    channel = await memory.recollection.gather_recap(ask("what happened here since yesterday?"))
    assert channel.days == ()  # a day's summaries are the server's, not one channel's


async def recap_calls(memory: MemoryManager, llm: LLM) -> int:
    await llm.flush_usage()
    async with memory.sessions() as session:
        return int(await session.scalar(select(func.count()).where(LlmCall.operation == "recap")) or 0)


async def test_one_model_call_per_recap_shared_and_kept(engine, settings, llm):
    memory = await started(engine, settings, llm)
    try:
        ids = await a_day(memory)
        made = await memory.recollection.gather_recap(ask("what did I miss?"))
        first, second = await asyncio.gather(*(memory.recollection.phrase_recap(made) for _ in range(2)))
        assert first.recap == second.recap and first.recap.threads
        assert all(ref in made.sources for item in first.recap.threads for ref in item.refs)
        assert ids["tournament"] in {made.sources[r].message_id for item in first.recap.threads for r in item.refs}
        # Asked again later, and by someone else over the same messages: the same input, no new call.
        memory.clock.advance(minutes=5)  # type: ignore[attr-defined]
        for again in (ask("what did I miss?"), ask("catch me up since 09:01", who=BOB, here=EVENTS)):
            same = await memory.recollection.gather_recap(again)
            assert same.digest == made.digest and (await memory.recollection.phrase_recap(same)).cached
        assert await recap_calls(memory, llm) == 1
        await say(memory, NOW + timedelta(minutes=1), CY, "the tournament needs two more chess clocks")
        await memory.flush()
        newer = await memory.recollection.gather_recap(ask("what did I miss?"))
        assert not (await memory.recollection.phrase_recap(newer)).cached
        assert await recap_calls(memory, llm) == 2
    finally:
        await memory.close()


async def test_a_deletion_or_an_opt_out_drops_the_recaps_kept(memory):
    ids = await a_day(memory)
    for change in ("delete", "optout"):
        made = await memory.recollection.gather_recap(ask("what did I miss?"))
        await memory.recollection.phrase_recap(made)
        assert memory.recaps.cache_report().size == 1
        if change == "delete":
            await memory.intake.delete([ids["bake"]])
            await memory.flush()
        else:
            await memory.admin.opt_out(GUILD, DEE, delete_stored=False)
        assert memory.recaps.cache_report().size == 0, change
    after = await memory.recollection.gather_recap(ask("what did I miss?"))
    told = (await memory.recollection.phrase_recap(after)).recap.model_dump_json()
    assert "bake sale" not in shown(after) + told and "Dee" not in shown(after) + told
    assert ids["bake"] not in after.quoted


async def test_another_processs_deletion_drops_the_recaps_kept_here(db_url, settings, monkeypatch):
    monkeypatch.setattr(coherence, "POLL_SECONDS", 3600.0)  # only following the log may drop it
    engines = [create_engine(db_url) for _ in range(2)]
    here, there = [await started(e, settings) for e in engines]
    try:
        ids = await a_day(here)
        made = await here.recollection.gather_recap(ask("what did I miss?"))
        await here.recollection.phrase_recap(made)
        assert here.recaps.cache_report().size == 1
        await there.admin.forget_member(GUILD, CY)
        await here.recollection.follow_others()  # what a reply does first
        assert here.recaps.cache_report().size == 0
        after = await here.recollection.gather_recap(ask("what did I miss?"))
        assert ids["bake"] not in after.quoted and "Cy" not in {p for t in after.threads for p in t.people}
    finally:
        for memory, engine in zip((here, there), engines, strict=True):
            await memory.close()
            await engine.dispose()
