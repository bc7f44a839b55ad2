"""Recall: find what was said (messages) and what was summarised (daily summaries) long ago.

Two stages. The database's own full-text engine (FTS5 bm25 / PostgreSQL ts_rank, × decay) picks a pool of
candidates, POOL_FACTOR × as many as asked for. Then every candidate is scored here, the same way on both
databases: BM25 over the pool (Snowball stems, as PostgreSQL's 'english' configuration uses), divided by the
pool's best, × temporal decay with a half-life (RECALL_HALF_LIFE_DAYS: a 7-day-old hit weighs ≈ 0.85, a
30-day-old ≈ 0.5 at the default 30). ts_rank has no notion of how rare a word is, so without the second
stage PostgreSQL would rank "trip" as high as "decided" and disagree with SQLite. There is no minimum
score: an old but relevant hit beats nothing, and the decay already puts it below newer equal ones.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Literal
from zoneinfo import ZoneInfo

import snowballstemmer
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.vectors import Vectors, cosine
from db import recall as store
from db.recall import decay_rate

log = logging.getLogger(__name__)
_WORD = re.compile(r"\w+", re.UNICODE)
# Question scaffolding and time words: they say *that* something is asked about the past, not *what*.
STOPWORDS = frozenset(
    """
a about above after again against ago all also am an and any anybody anyone are as at be because been before
being below between both but by can could day days did do does doing done down during each else ever few for
from further get gets got go goes going went had has have having he her here hers herself him himself his
how i if in into is it its itself
just know last me mention mentioned month months more most my myself no nor not now of off on once only or
other our ours ourselves out over own recall remember said same say says she should so some somebody someone
such talk talked tell than that the their theirs them themselves then there these they this those through
time to today told too under until up us very was we week weeks were what when where which while who whom why
will with would year years yesterday you your yours yourself yourselves
""".split()
)
MAX_TERMS = 8
POOL_FACTOR = 4
VECTOR_WEIGHT, TEXT_WEIGHT = 0.7, 0.3
MIN_HYBRID = 0.2  # below this (before decay) a hybrid hit is noise; the best keyword hit alone scores 0.3
RECENT_FOR_VECTORS = 200  # the newest messages are candidates for meaning-only matches
MIN_POOL = 100
K1, B = 1.2, 0.75  # the usual BM25 constants
_STEMMER = snowballstemmer.stemmer("english")


def query_terms(query: str, *, drop: set[str] | None = None) -> list[str]:
    """Content words of a question, lowercased, de-duplicated, in order; at most MAX_TERMS."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if len(word) > 1 and word not in STOPWORDS and word not in (drop or set()) and word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """The Snowball stem; cached, since the stemmer is pure Python and chat repeats its words all day."""
    return _STEMMER.stemWord(word)


def bm25_scores(terms: list[str], texts: list[str]) -> list[float]:
    """BM25 of each text for the terms (document frequencies from `texts` themselves: the pool) × coord².

    coord is the share of the question's words a text contains (Lucene's coordination factor), squared: a
    message with every word of "where did Bob's bike get stolen" is far likelier the answer than one that
    only says "stolen", and the product with the decay must not let a week's chatter bury it.
    """
    stems = {stem(t) for t in terms}
    docs = [Counter(map(stem, _WORD.findall(t.lower()))) for t in texts]
    if not docs:
        return []
    avg = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    df = {s: sum(1 for d in docs if s in d) for s in stems}
    idf = {s: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for s, n in df.items()}
    scores = []
    for doc in docs:
        length = sum(doc.values())
        matched = [s for s in stems if doc[s]]
        bm25 = sum(idf[s] * doc[s] * (K1 + 1) / (doc[s] + K1 * (1 - B + B * length / avg)) for s in matched)
        scores.append(bm25 * (len(matched) / len(stems)) ** 2)
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


class Recall:
    """Full-text recall with temporal decay over one database, either dialect."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, half_life_days: float, vectors: Vectors | None = None
    ) -> None:
        self._sessions = sessions
        self.half_life_days = half_life_days
        self._vectors = vectors  # None: text only (the default; embeddings are never required)

    async def recall(
        self,
        guild_id: int,
        query: str,
        *,
        now: datetime,
        zone: str = "UTC",
        user_id: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        channel_id: int | None = None,
        authors: dict[int, set[str]] | None = None,
    ) -> list[Hit]:
        """The best `limit` hits for `query`; `channel_id` is where it is asked (its own channel may be private).

        `authors` maps members named in the question to the words that named them: their own messages count
        as containing those words ("when did Bob mention his exam?" — Bob wrote "my exam", not "Bob").
        """
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        size = max(limit * POOL_FACTOR, MIN_POOL)
        tz = ZoneInfo(zone)
        days_since = since.astimezone(tz).date() if since else date.min
        days_until = (until.astimezone(tz) + timedelta(days=1)).date() if until else date.max
        searches = [(user_id, terms)] + [
            (a, [t for t in terms if t not in words]) for a, words in (authors or {}).items() if user_id in (None, a)
        ]
        messages: dict[int, store.MessageRow] = {}
        summaries: dict[tuple[int, date], store.SummaryRow] = {}
        async with self._sessions() as session:
            for author, words in searches:
                if not words:
                    continue
                for m in await store.search_messages(
                    session,
                    guild_id,
                    words,
                    user_id=author,
                    since=since,
                    until=until,
                    now=now,
                    half_life_days=self.half_life_days,
                    here=channel_id,
                    limit=size,
                ):
                    messages[m.message_id] = m
                for s in await store.search_summaries(
                    session,
                    guild_id,
                    words,
                    user_id=author,
                    since=days_since,
                    until=days_until,
                    today=now.astimezone(tz).date(),
                    half_life_days=self.half_life_days,
                    limit=size,
                ):
                    summaries[(s.user_id, s.day)] = s
            if self._vectors is not None and since is None and until is None:
                for m in await store.recent_messages(
                    session, guild_id, user_id=user_id, here=channel_id, limit=RECENT_FOR_VECTORS
                ):
                    messages.setdefault(m.message_id, m)
        hits = [
            Hit("message", guild_id, m.user_id, m.text, m.at, 0.0, m.channel_id, m.message_id)
            for m in messages.values()
        ]
        days = [
            Hit("summary", guild_id, s.user_id, s.text, datetime.combine(s.day, time(12), tz).astimezone(UTC), 0.0)
            for s in summaries.values()
        ]
        return (await self._rank(guild_id, query, terms, [hits, days], now=now, authors=authors or {}))[:limit]

    async def _rank(
        self,
        guild_id: int,
        query: str,
        terms: list[str],
        pools: list[list[Hit]],
        *,
        now: datetime,
        authors: dict[int, set[str]],
    ) -> list[Hit]:
        rate = decay_rate(self.half_life_days)
        similarity = await self._similarities(guild_id, query, [h for pool in pools for h in pool])
        scored: list[Hit] = []
        for pool in pools:  # each kind on its own scale, so they compete fairly
            texts = [" ".join([h.text, *sorted(authors.get(h.user_id, ()))]) for h in pool]
            relevance = bm25_scores(terms, texts)
            best = max(relevance, default=0.0) or 1.0
            for hit, r in zip(pool, relevance, strict=True):
                text_part = r / best
                if similarity is not None:  # hybrid: both halves count, and noise is dropped
                    text_part = VECTOR_WEIGHT * max(0.0, similarity[id(hit)]) + TEXT_WEIGHT * text_part
                    if text_part < MIN_HYBRID:
                        continue
                age = max(0.0, (now - hit.at).total_seconds() / 86400)
                scored.append(replace(hit, score=text_part * math.exp(-rate * age)))
        scored.sort(key=lambda h: (-round(h.score, 9), -h.at.timestamp(), h.message_id or 0))
        return scored

    async def _similarities(self, guild_id: int, query: str, hits: list[Hit]) -> dict[int, float] | None:
        """Cosine similarity of each hit to the question, or None (text only) without embeddings or on failure."""
        if self._vectors is None or not hits:
            return None
        try:
            [question] = await self._vectors.vectors(guild_id, [query], task="RETRIEVAL_QUERY")
            vectors = await self._vectors.vectors(guild_id, [h.text for h in hits])
        except Exception:  # any failure of the optional half leaves the text half working
            log.warning("embeddings unavailable; recall falls back to text only", exc_info=True)
            return None
        return {id(h): cosine(question, v) for h, v in zip(hits, vectors, strict=True)}
