"""The Recall service: a question's candidates from the words (full-text, words.py) and the meaning (vectors, here)
halves, read back through the SQL read scope and ranked (see ranking.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.faults import storage_trouble
from bot.llm.local_embedder import NotReady
from bot.memory.recall import words
from bot.memory.recall.question import Question
from bot.memory.recall.ranking import Found, Hit, counts_of, rank_messages, rank_summaries
from bot.memory.recall.snippets import Snippet, snippets_of
from bot.memory.recall.vectors import VectorIndex
from bot.text import WORD, stem
from db.search import messages as message_store
from db.search import turns as turn_store
from db.search.types import Search, Turn

log = logging.getLogger(__name__)
POOL = 120  # full-text candidates, whatever the number of results asked for
MEMBER_POOL = 200  # a named member's own candidates (and those of the time asked about)
MENTIONS = 2_000  # a named member's newest mentions, among which the nearest are looked for
VECTOR_POOL = 200
FEEDBACK_HITS = 5  # the named member's best hits that say what a question is about in their words
FEEDBACK_WEIGHT = 0.5  # their mean beside the question's own vector
RECENT_SHARE = 0.2  # "recently": the last fifth of the guild's stored span …
RECENT_DAYS = (3.0, 90.0)  # … but at least a few days and at most a season
# Every question's nearest are also looked for in the guild's last season on its own: a guild that has lived a
# year holds four times the messages it held at one month, and what was said a few weeks ago should meet no more
# competition then than it did at first (bench.soak, "weeks": 0.42 found at month 12 against 0.73 at month 1).
SEASON_DAYS = 90.0
# A named member's nearest are looked for in their last season too once MEMBER_POOL is under a twentieth of what they
# said: a paraphrase said weeks ago (cosine 0.2-0.4) then ranks below hundreds of their older lines (bench.soak_found,
# month 12: "weeks" 0.69 -> 0.75, evidence never a candidate 47 -> 31), while for a member with fewer the pool reaches
# deep enough, and their season's chatter only pushed older answers out of the budget (bench.recall --conversations
# with every named member's season: paraphrase 0.78 -> 0.72, end to end 0.79 -> 0.77; with this threshold end to end
# 0.79, paraphrase 0.76: one of its members has said 4,064).
MEMBER_SEASON_FROM = 20 * MEMBER_POOL
EncodeQuery = Callable[[str], Awaitable[np.ndarray]]
Window = words.Window


@dataclass
class Options:
    """Which parts of recall run (all by default; the benchmark's ablations switch them off)."""

    text: bool = True
    vectors: bool = True
    neighbours: bool = True
    time: bool = True
    who: bool = True
    parts: bool = True  # a message asking several questions searched part by part (bot/memory/recollection.py)
    repeats: bool = True  # repeats of what a better hit says dropped (ranking.distinct)
    asking: bool = True  # a message that asks ranks below one that tells (ranking.ASKING_PENALTY)
    feedback: bool = True  # a named member's best hits search again for the rest of an answer (more_like_the_best)


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
        self._observers: list[Callable[[float], None]] = []

    def observe(self, observer: Callable[[float], None]) -> None:
        """Tell `observer` how many seconds each search that finished took (`find`, every reply's recall)."""
        self._observers.append(observer)

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
    ) -> Found:
        """Ranked message hits and summary hits for a question asked in `here` (its own channel may be private);
        without `summaries`, no summary hits (a reply's search leaves them to `find_summaries`, beside it).
        `encoding` is set once the question has gone to the encoder (or will not)."""
        started = time.perf_counter()
        terms = tuple(question.terms) if self.options.text else ()
        search = Search(guild_id, terms, now, here, POOL, user_id=user_id, since=since, until=until)
        window = question.window if self.options.time else None
        members = question.members if self.options.who else {}
        tz = ZoneInfo(zone)
        recent = await self._recent_part(guild_id, now) if question.recent and self.options.time else None
        # Beside the words half, each on a session of its own: the meaning half (the question's vector, its nearest
        # messages and their rows) and the messages about each named member.
        embedding_task = asyncio.ensure_future(self._embed_question(guild_id, question, encoding))
        nearest_task = asyncio.ensure_future(
            self._nearest(search, embedding_task, members, window or recent, window_named=window is not None)
        )
        about_task = asyncio.ensure_future(words.about_members(self._sessions, search, members, pool=MEMBER_POOL))
        try:
            async with self._sessions() as session:
                turns, summary_rows = await words.by_words(
                    session, search, members, window or recent, tz if summaries else None, pool=MEMBER_POOL
                )
            for turn in await about_task:  # no connection held while it is awaited
                turns.setdefault(turn.message_id, turn)
            stems = {stem(w) for w in question.terms}
            counted = {m: counts_of(stems, t.text) for m, t in turns.items()}  # ranking's work, while rows are read
            query, cosine, near = await nearest_task
        finally:
            _stop(nearest_task, embedding_task, about_task)  # a failed or cancelled search: the rest is wanted no more
        for turn in near:
            turns.setdefault(turn.message_id, turn)
        if query is not None and self._index is not None:  # the words' candidates get their cosine too
            cosine |= await self._index.similarity(guild_id, query, [m for m in turns if m not in cosine])
        rank = partial(
            rank_messages, guild_id, question.terms, now=now, window=window, members=members,
            half_life_days=self.half_life_days, words=self.options.text, counted=counted, recent=recent,
            asking=self.options.asking, priors={},
        )  # fmt: skip
        hits = rank(list(turns.values()), cosine)
        if query is not None and members and self.options.feedback:
            again = await self._more_like_the_best(search, query, hits, turns, cosine, members=list(members))
            hits = rank(*again)
        found = hits, rank_summaries(guild_id, terms, summary_rows, tz)
        for observer in self._observers:
            observer(time.perf_counter() - started)
        return found

    async def _more_like_the_best(
        self,
        search: Search,
        query: np.ndarray,
        hits: list[Hit],
        turns: dict[int, Turn],
        cosine: dict[int, float],
        *,
        members: list[int],
    ) -> tuple[list[Turn], dict[int, float]]:
        """The candidates again after the named member's best few told what the question is about in their own
        words (pseudo-relevance feedback): an answer spread over weeks ("which sports does Ravi play?": bouldering
        one week, a tennis league the next) resembles its other parts more than it resembles the question. Each
        candidate's meaning is then the nearer of the two, the question's or the feedback's."""
        assert self._index is not None
        guild_id = search.guild_id
        best = [h.message_id for h in hits if h.user_id in members and h.message_id is not None][:FEEDBACK_HITS]
        seen = await self._index.vectors_of(guild_id, [m for m in best if m is not None])
        if not len(seen):
            return list(turns.values()), cosine
        shifted = query + FEEDBACK_WEIGHT * seen.mean(axis=0)
        shifted = (shifted / max(float(np.linalg.norm(shifted)), 1e-12)).astype(np.float32)
        found: dict[int, float] = {}
        for member in members:
            found.update(await self._index.search(guild_id, shifted, MEMBER_POOL, author=member))
        new = [m for m in found if m not in turns]
        if new:
            async with self._sessions() as session:
                for turn in _within(search, await turn_store.messages_by_id(session, guild_id, new, here=search.here)):
                    turns[turn.message_id] = turn
        nearer = await self._index.similarity(guild_id, shifted, [m for m in turns if m not in found])
        merged = {m: max(cosine.get(m, 0.0), found.get(m, nearer.get(m, 0.0))) for m in turns}
        return list(turns.values()), merged

    async def _mentions(self, search: Search, members: dict[int, set[str]]) -> dict[int, list[int]]:
        """For each named member, the newest MENTIONS messages within the search's period that name or mention them,
        read on one session (none if they cannot be read: the other vector pools still count)."""
        if not members:
            return {}
        found: dict[int, list[int]] = {}
        try:
            async with self._sessions() as session:
                for member, names in members.items():
                    found[member] = await message_store.newest_matching(
                        session, search.guild_id, list(words.about(member, names)), here=search.here, limit=MENTIONS,
                        since=search.since, until=search.until,
                    )  # fmt: skip
            return found
        except Exception as exc:
            level = logging.DEBUG if storage_trouble(exc) else logging.WARNING
            log.log(level, "reading a member's mentions failed; recall goes on without them", exc_info=True)
            return {}

    async def _recent_part(self, guild_id: int, now: datetime) -> Window | None:
        """What "recently" means in this guild at `now`: the last RECENT_SHARE of its stored span up to its newest
        message before `now` (a quiet month does not leave "recently" empty), within RECENT_DAYS; None: nothing
        stored before `now`. A guild's own pace, not a fixed month of calendar."""
        async with self._sessions() as session:
            stored = await message_store.span(session, guild_id, before=now)
        if stored is None:
            return None
        first, last = stored
        days = (last - first).total_seconds() / 86400 * RECENT_SHARE
        start = last - timedelta(days=min(max(days, RECENT_DAYS[0]), RECENT_DAYS[1]))
        return start, now

    async def find_summaries(
        self,
        guild_id: int,
        question: Question,
        *,
        now: datetime,
        zone: str = "UTC",
        user_id: int | None = None,
        until: datetime | None = None,
    ) -> list[Hit]:
        """`find`'s summary hits alone (a search begun before the route was known leaves them out); those of days
        over before `until`, if given."""
        terms = question.terms if self.options.text else []
        if not terms:
            return []
        named = [m for m in (question.members if self.options.who else {}) if user_id in (None, m)]
        tz = ZoneInfo(zone)
        async with self._sessions() as session:
            rows = await words.summary_rows(
                session, guild_id, terms, [user_id, *named], since=None, until=until, now=now, tz=tz
            )
        return rank_summaries(guild_id, terms, rows, tz)

    async def snippets(
        self, guild_id: int, hits: list[Hit], *, here: int | None, until: datetime | None = None
    ) -> list[Snippet]:
        """The best hits with the turns around them (written before `until`, if given), merged where they touch,
        best first."""
        return await snippets_of(
            self._sessions, guild_id, hits, here=here, neighbours=self.options.neighbours, until=until
        )

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
        search: Search,
        embedding: Awaitable[np.ndarray | None],
        members: dict[int, set[str]],
        window: Window | None,
        *,
        window_named: bool = False,
    ) -> tuple[np.ndarray | None, dict[int, float], list[Turn]]:
        """The question's vector (None: recall goes on words alone), the cosines of its nearest messages — in the
        whole guild and in its last season, among each named member's own messages (a busy member's last season on
        its own too) and their mentions, within the time the question points at, and among a named member's messages
        of a time it names (`window_named`; "recently" is too gentle a hint) — and the rows of those that the
        search's reader may see, within its period."""
        # The mentions are read while the question is encoded and the other pools searched (a SQL thread's work).
        mentions = asyncio.create_task(self._mentions(search, members))
        try:
            return await self._nearest_to(
                search, await embedding, list(members), mentions, window, window_named=window_named
            )
        finally:
            _stop(mentions)

    async def _nearest_to(
        self,
        search: Search,
        query: np.ndarray | None,
        members: list[int],
        mentions: asyncio.Task[dict[int, list[int]]],
        window: Window | None,
        *,
        window_named: bool,
    ) -> tuple[np.ndarray | None, dict[int, float], list[Turn]]:
        """`_nearest` once the question is encoded; `mentions`: the named members', being read."""
        if query is None or self._index is None:
            return None, {}, []
        guild_id = search.guild_id
        try:
            nearest = await self._index.search(guild_id, query, VECTOR_POOL)
            for member in members:  # their own messages (and below, those that name or mention them)
                nearest += await self._index.search(guild_id, query, MEMBER_POOL, author=member)
            season = (search.now - timedelta(days=SEASON_DAYS)).timestamp()
            if await self._index.oldest(guild_id) < season:  # a younger guild's season is all of it
                nearest += await self._index.search(guild_id, query, VECTOR_POOL, since=season)
                this_season = (season, search.now.timestamp())
                for member in members:  # and a busy member's own season (MEMBER_SEASON_FROM)
                    if await self._index.count(guild_id, member) >= MEMBER_SEASON_FROM:
                        nearest += await self._index.search(
                            guild_id, query, MEMBER_POOL, author=member, window=this_season
                        )
            if window is not None:
                span = (window[0].timestamp(), window[1].timestamp())
                nearest += await self._index.search(guild_id, query, MEMBER_POOL, window=span)
                for member in members if window_named else []:  # "what was Melanie playing in December"
                    nearest += await self._index.search(guild_id, query, MEMBER_POOL, author=member, window=span)
            for about in (await mentions).values():  # last: read meanwhile
                nearest += await self._index.search(guild_id, query, MEMBER_POOL, among=about)
        except NotReady:  # the model is loading (a fresh start): this question goes on words alone
            return None, {}, []
        except Exception as exc:  # the optional half failing leaves the words working
            # Storage away: its fault says so once (bot/faults.py); a line with a traceback per reply was the flood.
            level = logging.DEBUG if storage_trouble(exc) else logging.WARNING
            log.log(level, "vector search failed; recall uses words only", exc_info=True)
            return None, {}, []
        cosine = dict(nearest)
        async with self._sessions() as session:
            rows = await turn_store.messages_by_id(session, guild_id, list(cosine), here=search.here)
        return query, cosine, _within(search, rows)


def _within(search: Search, rows: list[Turn]) -> list[Turn]:
    """The rows written within the search's period (a replayed moment shows nothing after it)."""
    since, until = search.since, search.until
    return [t for t in rows if (since is None or t.at >= since) and (until is None or t.at < until)]


def _stop(*tasks: asyncio.Future[Any]) -> None:
    """Cancel what still runs; read what failed (if both halves failed, the words half's error is the one raised,
    and the other is not left for asyncio to report as never retrieved)."""
    for task in tasks:
        task.cancel()
        if task.done() and not task.cancelled():
            task.exception()
