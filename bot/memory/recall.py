"""Recall: find what was said long ago, with the turns around it, and pack it into what the model receives.

One retrieval path for every reply (questions about the past, and chat):
1. Read the question (bot/memory/question.py): content words, members it names, a time it points at.
2. Candidates: the database's full-text engine (a pool of POOL, by relevance alone: no decay here, so an old
   answer is not cut before it is scored), the named members' own messages, and the nearest message vectors
   (bot/memory/vector_index.py) — every candidate read back through the SQL read scope.
3. Score the same way on both databases: BM25 within the pool × coord² (share of the words present, squared)
   and the cosine to the question, each scaled to the pool, half each; a member the question names prefers
   their own messages and messages about them (not ones addressed to them); a time in the question prefers
   messages inside it; recency is only a gentle prior. The order never depends on how many results are asked
   for.
4. Snippets: the best hits come with the turns around them (the message before and after, what a hit replies
   to and the replies to it), merged when they touch; summaries have their own share.
5. Pack in rank order into a token budget: that text is exactly what the model receives.
"""

from __future__ import annotations

import asyncio
import logging
import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.llm.local_embedder import NotReady
from bot.llm.tokens import estimate_tokens
from bot.memory.question import Question, addressed_only, words_of
from bot.memory.vector_index import VectorIndex
from bot.text import MENTION, WORD, stem
from db.search import messages as message_store
from db.search import planner
from db.search import summaries as summary_store
from db.search import turns as turn_store
from db.search.types import Search, SummaryRow, Turn

log = logging.getLogger(__name__)
POOL = 120  # full-text candidates, whatever the number of results asked for
MEMBER_POOL = 200  # a named member's own candidates (and those of the time asked about)
VECTOR_POOL = 200
SNIPPETS = 200  # hits that may become snippets: the budget decides how many do
NEIGHBOURS = 10  # the best hits also get the message before and after
TEXT_WEIGHT, VECTOR_WEIGHT = 0.5, 0.5
WHO_BONUS = 1.0  # a member the question names: their messages and messages about them
WHEN_BONUS = 1.0  # inside the time the question points at
RECENCY = 0.05  # a gentle prior: at most this much, halving every RECALL_HALF_LIFE_DAYS
SUMMARY_SHARE = 0.2
COSINE_FLOOR = 0.15  # below this, a vector says nothing about relevance
RELEVANT_COSINE = 0.5  # at least this, a message clearly shares a chat's meaning (see Hit.relevant)
K1, B = 1.2, 0.75  # the usual BM25 constants
EncodeQuery = Callable[[str], Awaitable[np.ndarray]]
Names = Callable[[set[int]], Awaitable[dict[int, str]]]

# Kept for callers that only need the words of a text.
query_terms = words_of


def bm25_scores(terms: list[str], texts: list[str]) -> list[float]:
    """BM25 of each text for the terms (document frequencies from `texts` themselves: the pool) × coord².

    coord is the share of the question's words a text contains (Lucene's coordination factor), squared: a
    message with every word of "where did Bob's bike get stolen" is far likelier the answer than one that
    only says "stolen".
    """
    stems = {stem(t) for t in terms}
    return bm25_of(stems, [counts_of(stems, t) for t in texts])


Counts = tuple[int, dict[str, int]]  # a text's length in words, and how often each of the question's stems occurs


def counts_of(stems: set[str], text: str) -> Counts:
    """What ranking reads of a text: its length, and the question's stems in it (other words are stemmed to
    tell, not counted: a Counter of every stem was a third slower, ~300 texts a question)."""
    words = WORD.findall(text.lower())
    found: dict[str, int] = {}
    for word_stem in map(stem, words):
        if word_stem in stems:
            found[word_stem] = found.get(word_stem, 0) + 1
    return len(words), found


def bm25_of(stems: set[str], docs: list[Counts]) -> list[float]:
    """`bm25_scores` of texts already counted (the ranking reuses the counts for coverage)."""
    if not docs or not stems:
        return [0.0] * len(docs)
    avg = sum(length for length, _ in docs) / len(docs) or 1.0
    df = Counter(s for _, found in docs for s in found)
    idf = {s: math.log(1 + (len(docs) - df[s] + 0.5) / (df[s] + 0.5)) for s in stems}
    scores = []
    for length, found in docs:
        bm25 = sum(idf[s] * n * (K1 + 1) / (n + K1 * (1 - B + B * length / avg)) for s, n in found.items())
        scores.append(bm25 * (len(found) / len(stems)) ** 2)
    return scores


def relative_age(then: datetime, now: datetime) -> str:
    """'today', 'yesterday', '5 days ago', '3 weeks ago', '2 months ago', '1 year ago'."""
    days = (now.date() - then.date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    for limit, size, unit in ((14, 1, "day"), (60, 7, "week"), (365, 30, "month")):
        if days < limit:
            n = days // size
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    years = days // 365
    return f"{years} year{'s' if years != 1 else ''} ago"


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled item: a message (with a jump link) or a member's daily summary."""

    kind: Literal["message", "summary"]
    guild_id: int
    user_id: int
    text: str
    at: datetime
    score: float
    channel_id: int | None = None
    message_id: int | None = None
    reply_to_id: int | None = None
    coverage: float = 0.0  # share of the question's words present
    cosine: float = 0.0  # similarity of meaning (0 without vectors)
    matched: int = 0  # how many of the question's words are present

    @property
    def jump_url(self) -> str | None:
        """Discord's link to the message, or None for a summary."""
        if self.message_id is None:
            return None
        return f"https://discord.com/channels/{self.guild_id}/{self.channel_id}/{self.message_id}"

    def label(self, now: datetime, zone: str) -> str:
        """'2026-10-03, 7 weeks ago' in the guild's time zone."""
        local, today = self.at.astimezone(ZoneInfo(zone)), now.astimezone(ZoneInfo(zone))
        return f"{local:%Y-%m-%d}, {relative_age(local, today)}"

    def relevant(self) -> bool:
        """Worth telling a chat about unasked: most of the question's words, or clearly the same meaning."""
        # Three shared words of a longer message are as telling as most words of a short one.
        return self.coverage >= 0.75 or (self.matched >= 3 and self.coverage >= 0.5) or self.cosine >= RELEVANT_COSINE


Found = tuple[list[Hit], list[Hit]]  # a search's ranked message hits and summary hits


@dataclass
class Snippet:
    """A hit and the turns around it, oldest first."""

    hit: Hit
    turns: list[Turn]


@dataclass
class Recalled:
    """What recall found for a question: snippets and summaries best first, and the text the model receives."""

    snippets: list[Snippet] = field(default_factory=list)
    summaries: list[Hit] = field(default_factory=list)
    text: str = ""

    @property
    def hits(self) -> list[Hit]:
        """The best hits (for citations), best first."""
        return [s.hit for s in self.snippets] + self.summaries


@dataclass
class Options:
    """Which parts of recall run (all by default; the benchmark's ablations switch them off)."""

    text: bool = True
    vectors: bool = True
    neighbours: bool = True
    time: bool = True
    who: bool = True


class Recall:
    """Conversation-aware hybrid recall over one database, either dialect."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        half_life_days: float,
        index: VectorIndex | None = None,
        encode_query: EncodeQuery | None = None,
    ) -> None:
        self._sessions = sessions
        self.half_life_days = half_life_days
        self._index = index
        self._encode = encode_query
        self.options = Options()

    async def find(
        self,
        guild_id: int,
        question: Question,
        *,
        now: datetime,
        zone: str = "UTC",
        here: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        user_id: int | None = None,
        summaries: bool = True,
        encoding: asyncio.Event | None = None,
        light: bool = False,
    ) -> Found:
        """Ranked message hits and summary hits for a question asked in `here` (its own channel may be private);
        without `summaries`, no summary hits (chat has no use for them: `find_summaries` gets them later).
        `encoding` is set once the question has gone to the encoder (or will not). `light` (a chat, which is told
        relevant hits only): of the nearest messages, only those of RELEVANT_COSINE or more are read and ranked
        (an approximation: see docs/architecture.md)."""
        options = self.options
        terms = question.terms if options.text else []
        window = question.window if options.time else None
        members = question.members if options.who else {}
        turns: dict[int, Turn] = {}
        summary_rows: list[SummaryRow] = []
        tz = ZoneInfo(zone)
        # The meaning half runs beside the words half, on a session of its own: the question's vector, its nearest
        # messages and their rows come while the full-text search runs.
        embedding_task = asyncio.ensure_future(self._embed_question(guild_id, question, encoding))
        nearest_task = asyncio.ensure_future(
            self._nearest(
                guild_id,
                embedding_task,
                here=here,
                since=since,
                until=until,
                members=list(members),
                window=window,
                floor=RELEVANT_COSINE if light else -1.0,
            )
        )
        try:
            async with self._sessions() as session:
                named = [m for m in members if user_id in (None, m)]
                about = {m: [*sorted(names), str(m)] if options.who else [] for m, names in members.items()}
                # What the plans of several searches ask, at once (a period is searched without them); a search
                # for words alone counts them on its own statement's trip (db.search.messages).
                if since is None and until is None and members:
                    await planner.count_ahead(session, [*terms, *(w for ws in about.values() for w in ws)], named)
                if terms:
                    # The best POOL (of `user_id`, or everyone's) and each named member's own best MEMBER_POOL.
                    everyone, own = await message_store.search_with_members(
                        session,
                        Search(guild_id, tuple(terms), now, here, POOL, user_id=user_id, since=since, until=until),
                        named,
                        MEMBER_POOL,
                    )
                    for rows in [everyone, *own.values()]:
                        turns |= {row.message_id: row.turn() for row in rows}
                    if summaries:
                        summary_rows = await _summary_rows(
                            session, guild_id, terms, [user_id, *named], since=since, until=until, now=now, tz=tz
                        )
                for member in members:  # messages about them: their name, or a mention (its id)
                    about_them = Search(
                        guild_id, tuple(about[member]), now, here, MEMBER_POOL, since=since, until=until
                    )
                    for row in await message_store.search_messages(session, about_them):
                        turns.setdefault(row.message_id, row.turn())
                if not terms:  # nothing to search for but who and when: their messages in that time
                    for member in members:
                        for row in await message_store.recent_messages(
                            session,
                            guild_id,
                            user_id=member,
                            here=here,
                            limit=MEMBER_POOL,
                            since=window[0] if window else None,
                            until=window[1] if window else None,
                        ):
                            turns.setdefault(row.message_id, row.turn())
            stems = {stem(w) for w in question.terms}
            counted = {m: counts_of(stems, t.text) for m, t in turns.items()}  # ranking's work, while rows are read
            query, cosine, near = await nearest_task
        finally:
            _stop(nearest_task, embedding_task)  # a failed or cancelled search: the other half is wanted no more
        for turn in near:
            turns.setdefault(turn.message_id, turn)
        if query is not None and self._index is not None:  # the words' candidates get their cosine too
            cosine |= await self._index.similarity(guild_id, query, [m for m in turns if m not in cosine])
        hits = self._rank(
            guild_id, question, list(turns.values()), cosine, now=now, window=window, members=members, counted=counted
        )
        return hits, self._rank_summaries(guild_id, terms, summary_rows, tz)

    async def find_summaries(
        self, guild_id: int, question: Question, *, now: datetime, zone: str = "UTC", user_id: int | None = None
    ) -> list[Hit]:
        """`find`'s summary hits alone (a search begun before the route was known leaves them out)."""
        terms = question.terms if self.options.text else []
        if not terms:
            return []
        named = [m for m in (question.members if self.options.who else {}) if user_id in (None, m)]
        tz = ZoneInfo(zone)
        async with self._sessions() as session:
            rows = await _summary_rows(
                session, guild_id, terms, [user_id, *named], since=None, until=None, now=now, tz=tz
            )
        return self._rank_summaries(guild_id, terms, rows, tz)

    async def _embed_question(
        self, guild_id: int, question: Question, encoding: asyncio.Event | None = None
    ) -> np.ndarray | None:
        """The question's vector (None: no vectors for this question). `encoding` is set at once: nothing in this
        step waits until the encoder has the question."""
        if encoding is not None:
            encoding.set()
        if self._index is None or self._encode is None or not self.options.vectors:
            return None
        if not self._index.loaded(guild_id):  # a question never waits for the guild's index to be built
            self._index.warm(guild_id)
            return None
        named = {n for names in question.members.values() for n in names}
        plain = " ".join(w for w in WORD.findall(question.text) if w.lower() not in named)
        try:
            return (await self._encode(plain or question.text)).astype(np.float32)
        except NotReady:  # the model is loading (a fresh start): this question goes on words alone
            return None
        except Exception:  # the optional half failing leaves the words working
            log.warning("embedding a question failed; recall uses words only", exc_info=True)
            return None

    async def _nearest(
        self,
        guild_id: int,
        embedding: Awaitable[np.ndarray | None],
        *,
        here: int | None,
        since: datetime | None,
        until: datetime | None,
        members: list[int],
        window: tuple[datetime, datetime] | None,
        floor: float,
    ) -> tuple[np.ndarray | None, dict[int, float], list[Turn]]:
        """The question's vector (None: recall goes on words alone), the cosines of its nearest messages — in the
        whole guild, among each named member's own messages, and within the time the question points at — and
        the rows of those of `floor` or more that a reader in `here` may see, within `since`/`until`."""
        query = await embedding
        if query is None or self._index is None:
            return None, {}, []
        try:
            nearest = await self._index.search(guild_id, query, VECTOR_POOL)
            for member in members:
                nearest += await self._index.search(guild_id, query, MEMBER_POOL, author=member)
            if window is not None:
                span = (window[0].timestamp(), window[1].timestamp())
                nearest += await self._index.search(guild_id, query, MEMBER_POOL, window=span)
        except NotReady:  # the model is loading (a fresh start): this question goes on words alone
            return None, {}, []
        except Exception:  # the optional half failing leaves the words working
            log.warning("vector search failed; recall uses words only", exc_info=True)
            return None, {}, []
        cosine = dict(nearest)
        # A chat's nearest messages below the floor could never be told to it; reading them was a third of its
        # search (200 rows, ~5 ms of a reply on two busy cores, bench.reply).
        wanted = [m for m, c in cosine.items() if c >= floor]
        async with self._sessions() as session:
            rows = await turn_store.messages_by_id(session, guild_id, wanted, here=here)
        near = [t for t in rows if (since is None or t.at >= since) and (until is None or t.at < until)]
        return query, cosine, near

    def _rank(
        self,
        guild_id: int,
        question: Question,
        turns: list[Turn],
        cosine: dict[int, float],
        *,
        now: datetime,
        window: tuple[datetime, datetime] | None,
        members: dict[int, set[str]],
        counted: dict[int, Counts] | None = None,
    ) -> list[Hit]:
        """Every candidate scored (see the module's docstring), best first; `counted`: some texts, already."""
        if not turns:
            return []
        stems = {stem(w) for w in question.terms}
        counted = counted or {}
        docs = [counted[t.message_id] if t.message_id in counted else counts_of(stems, t.text) for t in turns]
        lexical = bm25_of(stems, docs) if self.options.text else [0.0] * len(turns)
        top_text = max(lexical) or 1.0
        cosines = [cosine.get(t.message_id, 0.0) for t in turns]
        top_cos = max(cosines) if cosines else 0.0
        rate = math.log(2) / self.half_life_days if self.half_life_days > 0 else 0.0
        hits = []
        for turn, doc, lex, cos in zip(turns, docs, lexical, cosines, strict=True):
            meaning = max(0.0, cos - COSINE_FLOOR) / max(1e-9, top_cos - COSINE_FLOOR) if top_cos > COSINE_FLOOR else 0
            score = TEXT_WEIGHT * lex / top_text + VECTOR_WEIGHT * meaning
            if members and any(_about(turn, member, names) for member, names in members.items()):
                score += WHO_BONUS
            if window is not None and window[0] <= turn.at < window[1]:
                score += WHEN_BONUS
            age = max(0.0, (now - turn.at).total_seconds() / 86400)
            score += RECENCY * math.exp(-rate * age)
            matched = len(doc[1])
            coverage = matched / len(stems) if stems else 0.0
            hits.append(
                Hit(
                    "message",
                    guild_id,
                    turn.user_id,
                    turn.text,
                    turn.at,
                    score,
                    turn.channel_id,
                    turn.message_id,
                    turn.reply_to_id,
                    coverage,
                    cos,
                    matched,
                )
            )
        hits.sort(key=lambda h: (-round(h.score, 9), -h.at.timestamp(), h.message_id or 0))
        return hits

    def _rank_summaries(self, guild_id: int, terms: list[str], rows: list[SummaryRow], tz: ZoneInfo) -> list[Hit]:
        if not rows:
            return []
        relevance = bm25_scores(terms, [r.text for r in rows])
        best = max(relevance) or 1.0
        hits = [
            Hit(
                "summary",
                guild_id,
                r.user_id,
                r.text,
                datetime.combine(r.day, time(12), tz).astimezone(UTC),
                score / best,
            )
            for r, score in zip(rows, relevance, strict=True)
        ]
        hits.sort(key=lambda h: (-round(h.score, 9), -h.at.timestamp(), h.user_id))
        return hits

    async def snippets(self, guild_id: int, hits: list[Hit], *, here: int | None) -> list[Snippet]:
        """The best hits with the turns around them, merged where they touch, best first."""
        best = hits[:SNIPPETS]
        if not best:
            return []
        as_turns = [Turn(h.message_id or 0, h.channel_id or 0, h.user_id, h.text, h.at, h.reply_to_id) for h in best]
        async with self._sessions() as session:
            extra = await turn_store.around(
                session, guild_id, as_turns, here=here, neighbours=NEIGHBOURS if self.options.neighbours else 0
            )
        by_id = {t.message_id: t for t in [*as_turns, *extra]}
        order: dict[int, list[int]] = {}  # each channel's known messages, oldest first
        for message_id in sorted(by_id):
            order.setdefault(by_id[message_id].channel_id, []).append(message_id)
        snippets: list[Snippet] = []
        taken: dict[int, Snippet] = {}
        for rank, (hit, turn) in enumerate(zip(best, as_turns, strict=True)):
            near = {turn.message_id}
            if turn.reply_to_id in by_id:
                near.add(turn.reply_to_id)  # type: ignore[arg-type]
            near |= {t.message_id for t in extra if t.reply_to_id == turn.message_id}
            if rank < NEIGHBOURS and self.options.neighbours:
                near |= _beside(turn.message_id, order[turn.channel_id]) & {t.message_id for t in extra}
            joined = next((taken[m] for m in near if m in taken), None)
            if joined is None:
                joined = Snippet(hit, [])
                snippets.append(joined)
            for message_id in near:
                if message_id not in taken:
                    taken[message_id] = joined
                    joined.turns.append(by_id[message_id])
        for snippet in snippets:
            snippet.turns.sort(key=lambda t: (t.at, t.message_id))
        return snippets


async def _summary_rows(
    session: AsyncSession,
    guild_id: int,
    terms: list[str],
    authors: list[int | None],
    *,
    since: datetime | None,
    until: datetime | None,
    now: datetime,
    tz: ZoneInfo,
) -> list[SummaryRow]:
    """Everyone's (or the asker's) and each named member's best daily summaries about the words, each once."""
    by_author = await summary_store.search_summaries(
        session,
        guild_id,
        terms,
        authors=list(dict.fromkeys(authors)),
        since=_day(since, tz, date.min),
        until=_day(until, tz, date.max, after=True),
        today=now.astimezone(tz).date(),
        half_life_days=0,
        limit=20,
    )
    return list({(s.user_id, s.day): s for found in by_author.values() for s in found}.values())


def _stop(*tasks: asyncio.Future[Any]) -> None:
    """Cancel what still runs; read what failed (if both halves failed, the words half's error is the one raised,
    and the other is not left for asyncio to report as never retrieved)."""
    for task in tasks:
        task.cancel()
        if task.done() and not task.cancelled():
            task.exception()


def _day(moment: datetime | None, tz: ZoneInfo, default: date, *, after: bool = False) -> date:
    if moment is None:
        return default
    local = moment.astimezone(tz).date()
    return local + timedelta(days=1) if after else local


def _beside(hit: int, channel: list[int]) -> set[int]:
    """The nearest known messages before and after `hit` in its channel (`channel`: its known ids, in order)."""
    i = bisect_left(channel, hit)
    return set(channel[max(0, i - 1) : i + 2])


def _about(turn: Turn, member: int, names: set[str]) -> bool:
    """Their own message, or one about them (a mention or their name, not only as the one spoken to)."""
    if turn.user_id == member:
        return True
    mentioned = {int(m) for m in MENTION.findall(turn.text)}
    if member in mentioned:
        return True
    return any(name in turn.text.lower() and not addressed_only(turn.text, name) for name in names)


def pack(
    snippets: list[Snippet],
    summaries: list[Hit],
    names: dict[int, str],
    *,
    budget: int,
    zone: str,
) -> str:
    """Snippets (and summaries in their share) as lines, in rank order, within `budget` tokens."""
    tz = ZoneInfo(zone)
    summary_room = int(budget * SUMMARY_SHARE) if summaries else 0
    blocks: list[str] = []
    used = 0

    def line(turn: Turn) -> str:
        body = MENTION.sub(lambda m: "@" + names.get(int(m.group(1)), "someone"), turn.text)
        return f"[{turn.at.astimezone(tz):%Y-%m-%d}] {names.get(turn.user_id, 'someone')}: {body}"

    for snippet in snippets:
        block = "\n".join(line(t) for t in snippet.turns)
        cost = estimate_tokens(block) + 1
        if used + cost > budget - summary_room:
            continue  # a smaller snippet further down may still fit
        blocks.append(block)
        used += cost
    for hit in summaries:
        block = f"[{hit.at.astimezone(tz):%Y-%m-%d}] summary of {names.get(hit.user_id, 'someone')}'s day: {hit.text}"
        cost = estimate_tokens(block) + 1
        if used + cost > budget:
            continue
        blocks.append(block)
        used += cost
    return "\n\n".join(blocks)
