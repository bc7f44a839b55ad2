"""Questions about the past reach recall and the reply cites date, author and a jump link (offline and stub)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from bot.memory.assembly import Asked
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.reply import cite
from bot.reply.model_turns import ModelTurns
from bot.reply.respond import Responder
from bot.reply.routing import Decision, Request, Route, fast_route
from db.search import summaries as recall_store
from db.summaries import save_day
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message
from tests.memory.facts.test_store import AppendingModel


class NoNames:
    async def resolve(self, guild_id, name):
        return []


@pytest.mark.parametrize(
    "text, route",
    [
        ("when did Bob mention his exam?", Route.RECALL),
        ("What did we decide about the trip last month?", Route.RECALL),
        ("do you remember when we went climbing?", Route.RECALL),
        ("remember when Ana baked that cake", Route.RECALL),
        ("search for lisbon tickets", Route.RECALL),
        ("what did I say?", None),  # nothing to search for: the conversation at hand answers that
        ("remember that I like tea", Route.REMEMBER),
        ("how are you?", None),
    ],
)
async def test_questions_about_the_past_are_routed_to_recall(text, route):
    decision = await fast_route(Request(GUILD, ALICE, text), NoNames())
    assert (decision.route if decision else None) is route


@pytest.fixture
async def memory(engine, settings, llm):
    memory = MemoryManager(engine, settings, llm=llm, facts_model=AppendingModel(), clock=FakeClock(T0))
    await memory.start()
    memory.turns = ModelTurns(llm, memory.directory, settings)
    old = message("my chemistry exam is on the 14th", author=BOB, name="Bob", at=T0 - timedelta(days=25))
    for msg in (
        old,
        message("pizza tonight?", author=ALICE, name="Ana", at=T0 - timedelta(days=1)),
        message("exams are the worst", author=ALICE, name="Ana", at=T0 - timedelta(days=2)),
    ):
        await memory.intake.message(msg)
    await memory.flush()
    memory.planted = old
    yield memory
    await memory.close()


async def test_recall_answer_cites_date_author_and_link(memory, llm):
    responder = Responder(
        memory.facts,
        memory.recollection,
        memory.directory,
        router=memory.turns.route,
        chatter=memory.turns.chat,
        policy="anyone",
        recall_chatter=None if llm.is_offline else memory.turns.chat,
    )
    answer = await responder.respond(Request(GUILD, ALICE, "when did Bob mention his exam?", channel_id=CHANNEL))
    assert answer.route is Route.RECALL
    link = f"https://discord.com/channels/{GUILD}/{CHANNEL}/{memory.planted.message_id}"
    first = next(line for line in answer.text.splitlines() if line.startswith("• "))
    day = (T0 - timedelta(days=25)).strftime("%Y-%m-%d")
    assert first == f"• {day}, 3 weeks ago — Bob: “my chemistry exam is on the 14th” <{link}>"
    if not llm.is_offline:  # the model got the recalled snippets, and the sources follow its answer
        assert "Recalled conversation:\n[" in answer.text and "\n\nSources:\n• " in answer.text
    else:
        assert answer.text.startswith("Here is what I found:\n• ")


async def test_nothing_found_says_so(memory):
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=memory.turns.chat, policy="anyone"
    )
    answer = await responder.respond(Request(GUILD, ALICE, "when did we talk about volcanoes?"))
    assert answer.text == "I couldn't find anything about that in what I've kept from this server."


async def test_chat_carries_what_recall_finds_to_the_model(memory, llm):
    received: list[str | None] = []

    async def chat(request, context):
        received.append(context)
        return await memory.turns.chat(request, context)

    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=chat, policy="anyone"
    )
    answer = await responder.respond(
        Request(GUILD, ALICE, "good luck to Bob with the chemistry exam on the 14th!", channel_id=CHANNEL)
    )
    assert answer.route is Route.CHAT
    assert received and "Recalled conversation:" in received[0]
    assert "Bob: my chemistry exam is on the 14th" in received[0]  # the exact text the model is given
    assert memory.planted.message_id in answer.quoted  # and the stored reply knows what it was built from


async def test_chat_about_nothing_in_particular_gets_no_recall(memory):
    received: list[str | None] = []

    async def chat(request, context):
        received.append(context)
        return "ok"

    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=chat, policy="anyone"
    )
    await responder.respond(Request(GUILD, ALICE, "how are you doing today?", channel_id=CHANNEL))
    assert "Recalled conversation" not in (received[0] or "")


async def test_a_paraphrased_question_finds_its_answer_offline(engine, settings, llm):
    from bot.llm.local_embedder import LocalEmbedder

    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(T0), embedder=LocalEmbedder())
    await memory.start()
    try:
        for msg in (
            message("my chemistry exam is on the 14th", author=BOB, name="Bob", at=T0 - timedelta(days=120)),
            message("pizza tonight?", author=ALICE, name="Ana", at=T0 - timedelta(days=1)),
            message("the weather is lovely", author=ALICE, name="Ana", at=T0 - timedelta(days=2)),
        ):
            await memory.intake.message(msg)
        await memory.flush()
        assert memory.embedding is not None
        await memory.embedding.idle()
        await memory.flush()
        assert await memory.recollection.vectors_ready(GUILD)
        asked = Asked(GUILD, ALICE, "when are Bob's finals at school?", channel_id=CHANNEL)
        received = (await memory.recollection.for_reply(asked)).text or ""
        assert "my chemistry exam is on the 14th" in received  # no word in common, four months old
    finally:
        await memory.close()


async def test_citations_name_every_author_and_render_mentions_without_pings(memory):
    await memory.intake.message(
        message(f"<@{ALICE}> the exam room moved to B12", author=BOB, name="Bob", at=T0 - timedelta(days=3))
    )
    await memory.flush()
    hits = await memory.recollection.recall(GUILD, "exam", now=T0, limit=5)
    stranger = replace(hits[-1], user_id=2**60 + 7777)  # a member whose name was never stored
    lines = await cite.cite(memory.directory, [*hits, stranger], T0)
    assert len(lines) == len(hits) + 1 and len(hits) >= 2 and not any("<@" in line for line in lines)
    assert any("— Bob: “Ana the exam room moved to B12”" in line for line in lines)
    assert lines[-1].split(" — ")[1].startswith(f"member {str(stranger.user_id)[-4:]}: “")
    assert await cite.cite(memory.directory, [], T0) == []


async def test_the_question_itself_is_never_its_own_answer(memory):
    """The asking message is stored before the reply and matches itself best: it is left out of what is cited."""
    asked = message("did anyone mention a chemistry exam?", author=ALICE, name="Ana", at=T0)
    await memory.intake.message(asked)
    await memory.flush()
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=memory.turns.chat, policy="anyone"
    )
    request = Request(GUILD, ALICE, asked.content, channel_id=CHANNEL, message_id=asked.message_id)
    answer = await responder.respond(request)
    assert answer.route is Route.RECALL
    cited = [line for line in answer.text.splitlines() if line.startswith("• ")]
    assert cited and not any(str(asked.message_id) in line for line in cited)
    assert str(memory.planted.message_id) in cited[0]


async def test_the_offline_answer_lists_what_recall_ranked_first(memory):
    """A hit packed as the turn beside a better one is cited too, in rank order, when it bears on the question: the
    answer used to cite only the best hit of each snippet, so what recall ranked second went unsaid when it sat
    beside the first."""
    hike = message("the volcano hike is on saturday", author=BOB, name="Bob", at=T0 - timedelta(days=3))
    beside = message(
        "for the volcano hike Bob said I will bring the map",
        author=ALICE,
        name="Ana",
        at=hike.created_at + timedelta(minutes=1),
    )
    for msg in (hike, beside):
        await memory.intake.message(msg)
    await memory.flush()
    responder = Responder(
        memory.facts, memory.recollection, memory.directory, router=None, chatter=memory.turns.chat, policy="anyone"
    )
    answer = await responder.respond(
        Request(GUILD, ALICE, "when did Bob mention the volcano hike?", channel_id=CHANNEL)
    )
    cited = [line for line in answer.text.splitlines() if line.startswith("• ")]
    assert [str(hike.message_id) in cited[0], str(beside.message_id) in cited[1]] == [True, True], answer.text


async def test_chat_and_a_routed_question_receive_the_same_recall_summaries_included(memory, monkeypatch):
    """Routing chooses the form of the answer, never how much is remembered: a chat and a question about the
    past receive the same recall for the same message, each from one summaries search after routing."""
    async with memory.sessions() as session, session.begin():
        await save_day(
            session,
            GUILD,
            (T0 - timedelta(days=9)).date(),
            {BOB: "Bob planned the volcano trip with Ana."},
            model="stub",
            version="1",
            at=T0,
        )
    searched = 0
    search_summaries = recall_store.search_summaries

    async def counted(*args, **kwargs):
        nonlocal searched
        searched += 1
        return await search_summaries(*args, **kwargs)

    monkeypatch.setattr(recall_store, "search_summaries", counted)
    received: list[str | None] = []

    async def model(request, context):
        received.append(context)
        return "ok"

    for route in (Route.CHAT, Route.RECALL):

        async def router(request, route=route):
            return Decision(route)

        responder = Responder(
            memory.facts,
            memory.recollection,
            memory.directory,
            router=router,
            chatter=model,
            policy="anyone",
            recall_chatter=model,
        )
        answer = await responder.respond(Request(GUILD, ALICE, "any news on the volcano trip?", channel_id=CHANNEL))
        assert answer.route is route
    assert searched == 2  # one for each reply
    assert "summary of Bob's day: Bob planned the volcano trip with Ana." in (received[-1] or "")
    assert received[0] == received[1]


async def test_an_answer_about_the_past_cites_what_bears_on_the_question_not_a_fixed_five(engine, settings, llm):
    from bot.llm.local_embedder import LocalEmbedder

    carol = 2**60 + 1003
    memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(T0), embedder=LocalEmbedder())
    await memory.start()
    try:
        said = [message("my chemistry exam is on the 14th", author=BOB, name="Bob", at=T0 - timedelta(days=40))]
        for i, line in enumerate(
            ("my cat knocked the plant over again", "the cat sleeps on my laptop all day", "vet visit for the cat",
             "cat food prices are wild", "my cat learned to open doors", "new scratching post for the cat")
        ):  # fmt: skip
            said.append(message(line, author=carol, name="Carol", at=T0 - timedelta(days=3, hours=i)))
        for m in said:
            await memory.intake.message(m)
        await memory.flush()
        assert memory.embedding is not None
        await memory.embedding.idle()
        await memory.flush()
        assert await memory.recollection.vectors_ready(GUILD)
        responder = Responder(
            memory.facts,
            memory.recollection,
            memory.directory,
            router=None,
            chatter=lambda r, c: "unused",
            policy="anyone",
        )  # offline: the answer lists what it cites
        answer = await responder.respond(
            Request(GUILD, ALICE, "when did Bob mention his chemistry exam?", channel_id=CHANNEL)
        )
        assert answer.route is Route.RECALL
        bullets = [line for line in answer.text.splitlines() if line.startswith("• ")]
        assert len(bullets) == 1 and "my chemistry exam is on the 14th" in bullets[0], answer.text
    finally:
        await memory.close()
