"""A named member's answer spread over weeks is found by what its parts share (the feedback search), on both
databases, with the real offline encoder: the question resembles one part, the parts resemble each other."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from bot.llm.local_embedder import LocalEmbedder
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.recall import ranking, search
from bot.memory.recall.search import Options
from tests.factories import ALICE, BOB, CHANNEL, GUILD, T0, message

COOKED = (
    "made a huge pot of ramen broth tonight",
    "second attempt at ramen, the broth was way better",
    "homemade gyoza for the ramen night",
)
CHATTER = [
    "lol same", "good morning everyone", "anyone watching the match tonight?", "pizza or curry, I can't decide",
    "that meme is cursed", "so tired today", "brb coffee", "happy friday!!", "the bus was late again",
    "did anyone see the new trailer?", "my cat is judging me", "rain again, of course", "gm gm",
    "that's hilarious", "weekend plans anyone?", "new phone who dis", "ugh mondays", "can't wait for summer",
]  # fmt: skip


@pytest.fixture
async def memory(engine, settings, monkeypatch):
    monkeypatch.setattr(search, "VECTOR_POOL", 3)  # few candidates by meaning: the spread parts must earn theirs
    monkeypatch.setattr(search, "MEMBER_POOL", 3)
    monkeypatch.setattr(search, "FEEDBACK_HITS", 1)  # a guild this small has one telling hit; the benchmark chose 5
    memory = MemoryManager(engine, settings, clock=FakeClock(T0), embedder=LocalEmbedder())
    await memory.start()
    said = [(BOB, text, days) for days, text in zip((60, 40, 20), COOKED, strict=True)]
    said += [(BOB, text, 1 + n / 10) for n, text in enumerate(CHATTER)]
    said += [(ALICE, f"{text}!", 2 + n / 10) for n, text in enumerate(CHATTER)]
    for author, text, days in said:
        name = "Bob" if author == BOB else "Ana"
        await memory.intake.message(message(text, author=author, name=name, at=T0 - timedelta(days=days)))
    await memory.flush()
    assert memory.embedding is not None
    await memory.embedding.idle()
    await memory.flush()
    assert await memory.recollection.vectors_ready(GUILD)
    yield memory
    await memory.close()


async def found(memory: MemoryManager) -> set[str]:
    question = "what has Bob been cooking?"
    hits = await memory.recollection.recall(GUILD, question, channel_id=CHANNEL, limit=50)
    return {h.text for h in hits} & set(COOKED)


async def test_the_parts_of_an_answer_spread_over_weeks_find_each_other(memory):
    assert await found(memory) == set(COOKED)
    memory.recall.options = Options(feedback=False)
    assert await found(memory) != set(COOKED), "without the feedback search the question alone finds them all"


async def test_each_candidate_is_counted_and_weighed_once_though_the_search_ranks_twice(memory, monkeypatch):
    """The feedback search ranks the candidates again: the question's words in each candidate's text and what its
    who and when add are worked out once (redone, they were about a quarter of the ranking's time in bench.soak)."""
    texts: Counter[str] = Counter()
    weighed: Counter[int] = Counter()
    for module in (search, ranking):
        count = module.counts_of
        monkeypatch.setattr(module, "counts_of", lambda stems, text, c=count: (texts.update([text]), c(stems, text))[1])
    priors = ranking._priors
    monkeypatch.setattr(
        ranking, "_priors", lambda turn, *rest: (weighed.update([turn.message_id]), priors(turn, *rest))[1]
    )
    assert await found(memory) == set(COOKED)
    assert texts and max(texts.values()) == 1
    assert weighed and max(weighed.values()) == 1
