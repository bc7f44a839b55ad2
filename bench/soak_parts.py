"""Where a recall's time goes as bench.soak's guild grows: the guild imported fresh up to each checkpoint (as
bench.soak_found does), the bot's collection policy on, and the soak's 200 timed questions asked of every checkpoint
in turn, twice (the first round warms the process, the second is reported), each as a reply holds it. Prints, per
checkpoint, recall p50 and p99 and the mean milliseconds of each part of a search, and how each grew from the first
checkpoint to the last.

The parts overlap (the words and the meaning halves run at once, each on a session of its own), so they do not add
up to the search; a part's growth says where a bigger guild costs more.

    python -m bench.soak_parts                    # months 1 and 12, SQLite (~10 min)
    python -m bench.soak_parts --months 1,6,12 --postgres postgresql+asyncpg://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, AsyncExitStack, contextmanager
from typing import Any

from bench.common import print_table
from bench.conversations import Conversation
from bench.soak import ask_in_turn, embedder_for, pct, probe_texts
from bench.soak_found import checkpoints_asked, imported
from bench.soak_guild import TELLINGS, soak_guild
from bot import collector as collection
from bot.memory.manager import MemoryManager
from bot.memory.recall import search, vectors, words
from db.search import turns

RANKING = "ranking"
CANDIDATES = "candidates ranked (a count, not ms)"
# What is timed: (where it lives, its name, what the table calls it).
PARTS: list[tuple[Any, str, str]] = [
    (words, "by_words", "words: everyone's, named members' own"),
    (words, "about_members", "words: about named members"),
    (search.Recall, "_mentions", "named members' mentions"),
    (search.Recall, "_nearest_to", "meaning: pools and their rows"),
    (vectors.VectorIndex, "search", "vector searches"),
    (turns, "messages_by_id", "rows by id"),
    (search, "rank_messages", RANKING),
    (search.Recall, "_more_like_the_best", "feedback search"),
    (search.Recall, "find", "search (all of the above)"),
    (search.Recall, "snippets", "snippets"),
]
Spent = dict[str, float]


@contextmanager
def timing(spent: Spent) -> Iterator[None]:
    """Each part's seconds added to `spent` while inside; the originals back after."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in PARTS]
    for (owner, name, label), (_, _, original) in zip(PARTS, saved, strict=True):
        setattr(owner, name, _timed(original, label, spent))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _timed(original: Callable[..., Any], label: str, spent: Spent) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - began

        return timed_async

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if label == RANKING:  # rank_messages(guild_id, terms, turns, …): its first call has the most
            spent[CANDIDATES] = max(spent[CANDIDATES], len(args[2]))
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - began

    return timed


async def _measure(
    months: list[int], messages: int, seed: int, postgres: str | None, tellings: int
) -> dict[int, tuple[list[float], list[Spent]]]:
    """Per checkpoint, each reported probe's seconds and what each part of it took. Every checkpoint is imported
    first, then each question is asked of them in turn: this machine's pace drifts by a third over minutes, and
    checkpoints timed one after the other measured the drift (month 12 over month 1: 1.1x in one run, 2.0x in the
    next, the same code)."""
    conv, _ = soak_guild(messages, seed, tellings)
    embedder = await embedder_for(conv, messages, seed)
    texts = probe_texts()  # bench.soak's questions
    try:
        async with AsyncExitStack() as stack:
            memories = {}
            for month in months:
                memories[month], _ = await stack.enter_async_context(
                    imported(month, conv, embedder, postgres=postgres, seed=seed)
                )
            gc.freeze()  # the bot's collection policy, as bench.soak runs it: between the questions
            collector = collection.start(memories[months[0]].replies.between)
            try:
                await _probes(memories, conv, texts)  # the first round warms the process
                return await _probes(memories, conv, texts)
            finally:
                await collection.stop(collector)
                gc.unfreeze()
    finally:
        embedder.close()


async def _probes(
    memories: dict[int, MemoryManager], conv: Conversation, texts: list[str]
) -> dict[int, tuple[list[float], list[Spent]]]:
    months = list(memories)
    spent: dict[int, list[Spent]] = {month: [] for month in months}

    def parts_of(i: int) -> AbstractContextManager[None]:
        spent[months[i]].append(defaultdict(float))
        return timing(spent[months[i]][-1])

    took = await ask_in_turn(list(memories.values()), conv.guild_id, conv.channels[0].id, texts, parts_of)
    return {month: (took[i], spent[month]) for i, month in enumerate(months)}


async def run(
    messages: int, months: list[int], *, postgres: str | None, seed: int = 7, tellings: int = TELLINGS
) -> list[list[str]]:
    """The table's rows (what, each checkpoint's milliseconds, the last's over the first's), printed too; `tellings`:
    as in bench.soak (a small guild holds fewer stories)."""
    measured = await _measure(months, messages, seed, postgres, tellings)

    def row(label: str, value: Callable[[list[float], list[Spent]], float], scale: float = 1000) -> list[str]:
        ms = [scale * value(*measured[m]) for m in months]
        return [label, *(f"{v:.1f}" for v in ms), f"{ms[-1] / ms[0]:.2f}x" if ms[0] else "-"]

    def mean_of(part: str) -> Callable[[list[float], list[Spent]], float]:
        return lambda _, parts: statistics.mean(p[part] for p in parts)

    rows = [row("recall p50", lambda took, _: pct(took, 0.5)), row("recall p99", lambda took, _: pct(took, 0.99))]
    rows += [row(label, mean_of(label)) for _, _, label in PARTS]
    rows.append(row(CANDIDATES, mean_of(CANDIDATES), scale=1))
    name = "PostgreSQL" if postgres else "SQLite"
    title = f"bench.soak_parts, {name}: {messages:,} messages (seed {seed}), mean ms per question unless a percentile"
    print_table(title, ["part", *(f"month {m}" for m in months), "last / first"], rows)
    return rows


def main() -> None:
    messages, months, postgres, seed = checkpoints_asked(__doc__)
    asyncio.run(run(messages, months, postgres=postgres, seed=seed))


if __name__ == "__main__":
    main()
