"""Recollection: what memory gives a reply — a member's merged context, recall of what was said, and recaps of a
span ("what did I miss?").

The responder and the views of memory (/memory context, `show`, `recall`) ask here; how the context is merged
and cached lives in bot/memory/summaries/, how recall searches and ranks in bot/memory/recall.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from functools import partial

from bot.lifecycle import abandon
from bot.memory.assembly import Asked, Remembered, assemble
from bot.memory.choices import Choices
from bot.memory.clock import Clock
from bot.memory.facts.face import Facts
from bot.memory.names import NameDirectory
from bot.memory.recall import Found, Hit, Recall, Recalled, pack
from bot.memory.recall.embedding import Replies
from bot.memory.recall.question import Question, asks_after, parts_of
from bot.memory.recall.question import read as read_question
from bot.memory.recall.ranking import distinct, interleave
from bot.memory.recap.face import Phrased, RecapAsk, Recaps
from bot.memory.recap.material import Material
from bot.memory.summaries.context import ContextBuilder
from bot.text import MENTION

FLOOR_HITS = 10  # a remark's recall is told when one of this many best hits is relevant (see `_worth_telling`)


class Recollection:
    """Context and recall for replies and for the views of memory."""

    def __init__(
        self,
        recall: Recall,
        *,
        facts: Facts,
        context: ContextBuilder | None,
        names: NameDirectory,
        choices: Choices,
        clock: Clock,
        replies: Replies,
        budget_tokens: int,
        vectors_ready: Callable[[int | None], Awaitable[bool]],
        wait_seconds: Callable[[], float],
        recaps: Recaps,
        follow_others: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._recall = recall
        self._recaps = recaps
        self._follow_others = follow_others
        self._facts = facts
        self._context = context
        self._names = names
        self._choices = choices
        self._clock = clock
        self._replies = replies
        self._budget = budget_tokens
        self._vectors_ready = vectors_ready
        self._wait_seconds = wait_seconds  # MEMORY_WAIT_SECONDS, read at each reply

    def under_way(self) -> AbstractAsyncContextManager[None]:
        """Hold while a reply is being made: background writes and embedding let it go first."""
        return self._replies.under_way()

    async def follow_others(self) -> None:
        """Apply what other processes changed until now (a forget-me, a purge): a reply that begins after such a
        change has committed never carries what it removed."""
        if self._follow_others is not None:
            await self._follow_others()

    async def vectors_ready(self, guild_id: int | None = None) -> bool:
        """Wait until questions can be embedded and searched in the guild's index (a one-question command, a
        benchmark); False without vectors. Replies never wait: they go on words alone meanwhile."""
        return await self._vectors_ready(guild_id)

    async def context(
        self, guild_id: int, user_id: int, *, now: datetime | None = None, patient: bool = False
    ) -> str | None:
        """A member's merged context (facts, today, the last week, earlier); None when nothing is known.

        A reply waits at most MEMORY_WAIT_SECONDS; `patient` (views of memory: /context, `show`) waits for it all.
        """
        if self._context is None:
            return await self._facts.get(guild_id, user_id)
        return await self._context.get_memories(guild_id, user_id, now=now, patient=patient)

    async def for_reply(self, asked: Asked, *, found: asyncio.Future[Found] | None = None) -> Remembered:
        """What a reply to `asked` receives from memory, and its provenance: the one assembly (bot/memory/assembly.py)
        that replies, `recall`, `prompt` and the benchmarks all read. `found`: the recall search for it, begun while
        the model routes the message."""

        def recollect(message: Asked, search: asyncio.Future[Found] | None) -> Awaitable[Recalled]:
            return self.recollect(
                message.guild_id, message.text, channel_id=message.channel_id, floor=True, found=search,
                asked_in=message.message_id,
            )  # fmt: skip

        return await assemble(
            asked,
            context=self.context,
            facts_of=self._facts.cached,
            name_of=self._names.name,
            recollect=recollect,
            wait_seconds=self._wait_seconds(),
            found=found,
        )

    async def gather_recap(self, asked: RecapAsk) -> Material:
        """What a recap ("what did I miss?") is made from: the span's threads and days' summaries within the read
        scope of the channel asked in, and its extract; never asks the model (bot/memory/recap/)."""
        return await self._recaps.gather(asked)

    async def phrase_recap(self, made: Material) -> Phrased:
        """The recap of what `gather_recap` gathered: one model call per input, shared and kept until a change."""
        return await self._recaps.phrase(made)

    def remembered(self, guild_id: int, user_id: int) -> str | None:
        """What this process still has in mind about a member without reading the database: the last context
        built, else the facts last read; None when nothing is. For a reply while storage is away."""
        built = self._context.last_good(guild_id, user_id) if self._context is not None else None
        return built or self._facts.known(guild_id, user_id)

    async def describe(self, guild_id: int, user_id: int, *, patient: bool = False) -> str | None:
        """Everything the bot would tell about a member, names rendered, nothing that pings."""
        await self.follow_others()
        known = await self.context(guild_id, user_id, patient=patient)
        return await self._names.render_mentions(guild_id, known, at=False) if known else None

    async def recall(
        self,
        guild_id: int,
        query: str,
        *,
        user_id: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        channel_id: int | None = None,
        now: datetime | None = None,
    ) -> list[Hit]:
        """Messages and daily summaries about `query`, best first; asked in `channel_id` (its own may be private).

        Members the query names (by mention, or by a name only one member has) become a preference for their
        messages and messages about them, not words to search for.
        """
        now = now or self._clock.now()
        zone = self._choices.zone(guild_id)
        question = await self._read(guild_id, query, now=now, zone=zone)
        messages, summaries = await self._recall.find(
            guild_id, question, now=now, zone=zone, here=channel_id, since=since, until=self._until(until),
            user_id=user_id,
        )  # fmt: skip
        # Summaries keep to their share (a quarter, at least one) and never push messages out of order.
        merged = messages[:limit] + summaries[: max(1, limit // 4)]
        merged.sort(key=lambda h: -h.score)
        return merged[:limit]

    async def search(
        self,
        guild_id: int,
        text: str,
        *,
        channel_id: int | None,
        now: datetime | None = None,
        summaries: bool = True,
        encoding: asyncio.Event | None = None,
    ) -> Found:
        """Recall's ranked message and summary hits for a message, before they become snippets (a reply starts
        this while the model routes the message, without `summaries`, and `recollect` finishes it); `encoding`
        is set once the question has gone to the encoder (or will not)."""
        now = now or self._clock.now()
        zone = self._choices.zone(guild_id)
        async with self._replies.under_way():  # background embedding waits meanwhile (a search outside a reply too)
            asked = await self._questions(guild_id, text, now=now, zone=zone)
            find = partial(
                self._recall.find, guild_id, now=now, zone=zone, here=channel_id, until=self._until(),
                summaries=summaries,
            )  # fmt: skip
            if len(asked) == 1:
                return await find(asked[0], encoding=encoding)
            # Several questions in one message: each part searched on its own, taken in turns.
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(find(q, encoding=encoding if i == 0 else None)) for i, q in enumerate(asked)]
            return interleave([task.result() for task in tasks])

    async def _questions(self, guild_id: int, text: str, *, now: datetime, zone: str) -> list[Question]:
        """The message read as a question, or each of its parts if it asks about different people or times; a part
        that names no one is about whom the whole names ("Rui's band, and where was their first gig?")."""
        whole = await self._read(guild_id, text, now=now, zone=zone)
        parts = parts_of(text) if self._recall.options.parts else [text]
        if len(parts) == 1:
            return [whole]
        asked = []
        for part in parts:
            question = await self._read(guild_id, part, now=now, zone=zone)
            asked.append(question if question.members else replace(question, members=whole.members))
        # Parts about the same people at the same time are one story asked twice over ("what did Mel build, and
        # what wood was it?"): the whole question finds both halves better (0.89 against 0.83 on the benchmark).
        if len({(frozenset(q.members), q.window) for q in asked}) == 1:
            return [whole]
        return asked

    async def recollect(
        self,
        guild_id: int,
        text: str,
        *,
        channel_id: int | None,
        budget: int | None = None,
        now: datetime | None = None,
        floor: bool = False,
        found: Awaitable[Found] | None = None,
        asked_in: int | None = None,
    ) -> Recalled:
        """What recall gives the model for a message: snippets around the best hits, then summaries in what they
        leave of the budget, packed.

        `floor` (every reply): nothing unless the message points at something memory may hold (`_worth_telling`),
        so a chat about nothing in particular costs nothing, while a question in any form gets the whole recall.
        `found`: `search(…, summaries=False)` for this message, under way (its summaries are searched here).
        `asked_in`: the stored message that asks (it matches itself best and answers nothing; stored as addressed
        to the bot it is no candidate, but an older version stored questions as speech).
        """
        zone = self._choices.zone(guild_id)
        now = now or self._clock.now()
        searched = asyncio.ensure_future(
            found or self.search(guild_id, text, channel_id=channel_id, now=now, summaries=False)
        )
        summarising: asyncio.Future[list[Hit]] | None = None
        try:
            question = await self._read(guild_id, text, now=now, zone=zone)  # for the summaries and the floor
            summarising = asyncio.ensure_future(
                self._recall.find_summaries(guild_id, question, now=now, zone=zone, until=self._until())
            )
            hits, _ = await searched
            hits = [h for h in hits if asked_in is None or h.message_id != asked_in]
            hits = distinct(hits) if self._recall.options.repeats else hits
            if floor and not self._worth_telling(question, hits):
                abandon(summarising, name="summaries of a recall under the floor")
                return Recalled()
            snippets = await self._recall.snippets(guild_id, hits, here=channel_id, until=self._until())
            summaries = (await summarising)[:5]
        except BaseException:
            # Storage away (or the reply cancelled) under one part: the other parts are stopped and what they met is
            # read, not left for asyncio to report with its traceback as an exception nobody retrieved.
            abandon(searched, name="recall search of a failed recall")
            if summarising is not None:
                abandon(summarising, name="summaries of a failed recall")
            raise
        for snippet in snippets:  # the asking message may still come in as a hit's neighbour or reply
            snippet.turns = [t for t in snippet.turns if asked_in is None or t.message_id != asked_in]
        people = {t.user_id for s in snippets for t in s.turns} | {h.user_id for h in summaries}
        people |= {int(m) for s in snippets for t in s.turns for m in MENTION.findall(t.text)}
        names = await self._names.names(guild_id, people)
        packed = pack(snippets, summaries, names, budget=budget or self._budget, zone=zone)
        # Only what the text holds: a reply's provenance is what the model was shown, not everything prepared.
        return Recalled(packed.snippets, packed.summaries, packed.text, packed.hits(hits))

    @staticmethod
    def _worth_telling(question: Question, hits: list[Hit]) -> bool:
        """The relevance floor of a reply's recall. Similarity alone cannot be it: "good morning everyone" finds its
        twins in any guild (cosine 0.8), while a question's answer is mostly a paraphrase of it (cosine 0.3–0.7).
        So what the message points at decides (a member, a time, a question with words to search for), and a
        remark of a few words earns recall only by a hit holding most of its words or clearly its meaning."""
        asking = asks_after(question)
        return asking if asking is not None else any(h.relevant() for h in hits[:FLOOR_HITS])

    def _read(self, guild_id: int, text: str, *, now: datetime, zone: str) -> Awaitable[Question]:
        """`text` read as a question, the members it names looked up among the guild's names."""
        return read_question(text, now=now, zone=zone, resolve=partial(self._names.resolve_all, guild_id))

    def _until(self, until: datetime | None = None) -> datetime | None:
        """The end of what a search may show: `until`, and never past a replayed moment (the clock's horizon)."""
        horizon = self._clock.horizon()
        if horizon is None or until is None:
            return until or horizon
        return min(until, horizon)
