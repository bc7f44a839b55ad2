"""Ranking recall's candidates, the same way on both databases.

BM25 within the pool × coord² (share of the words present, squared) and the cosine to the question, each scaled
to the pool, half each; a member the question names prefers their own messages and messages about them (not ones
addressed to them); a time in the question prefers messages inside it; "recently" prefers the recent part of the
guild's span, less than a name does; recency is only a gentle prior. The order never depends on how many results
are asked for.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Literal
from zoneinfo import ZoneInfo

from bot.memory.recall.question import addressed_only
from bot.text import MENTION, WORD, stem
from db.search.types import SummaryRow, Turn

TEXT_WEIGHT, VECTOR_WEIGHT = 0.5, 0.5
WHO_BONUS = 1.0  # a member the question names: their messages and messages about them
WHEN_BONUS = 1.0  # inside the time the question points at
# Inside the recent part of the guild's span, for "recently", "lately": a nudge between equals, never a name's
# weight (37 such questions scored 0.35 when "recently" weighed as much as naming the author).
RECENT_BONUS = 0.25
assert RECENT_BONUS < WHO_BONUS
# A message that asks is seldom what answers: "tattoo regret stories?" is chatter about tattoos, "sat for 3 hours for
# this moth on my ankle" is the tattoo. Less than a name or a time, so a member's own question still comes first.
ASKING_PENALTY = 0.2
_ASKS = re.compile(r"\?[\W_]*$")
RECENCY = 0.05  # a gentle prior: at most this much, halving every RECALL_HALF_LIFE_DAYS
COSINE_FLOOR = 0.15  # below this, a vector says nothing about relevance
RELEVANT_COSINE = 0.5  # at least this, a message clearly shares a chat's meaning (see Hit.relevant)
K1, B = 1.2, 0.75  # the usual BM25 constants
Counts = tuple[int, dict[str, int]]  # a text's length in words, and how often each of the question's stems occurs


def bm25_scores(terms: Sequence[str], texts: list[str]) -> list[float]:
    """BM25 of each text for the terms (document frequencies from `texts` themselves: the pool) × coord².

    coord is the share of the question's words a text contains (Lucene's coordination factor), squared: a
    message with every word of "where did Bob's bike get stolen" is far likelier the answer than one that
    only says "stolen".
    """
    stems = {stem(t) for t in terms}
    return bm25_of(stems, [counts_of(stems, t) for t in texts])


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


def jump_url(guild_id: int, channel_id: int | None, message_id: int) -> str:
    """Discord's link to a message."""
    return f"https://discord.com/channels/{guild_id}/{channel_id}/{message_id}"


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
        return jump_url(self.guild_id, self.channel_id, self.message_id)

    def label(self, now: datetime, zone: str) -> str:
        """'2026-10-03, 7 weeks ago' in the guild's time zone."""
        local, today = self.at.astimezone(ZoneInfo(zone)), now.astimezone(ZoneInfo(zone))
        return f"{local:%Y-%m-%d}, {relative_age(local, today)}"

    def relevant(self) -> bool:
        """Worth telling a chat about unasked: most of the question's words, or clearly the same meaning."""
        # Three shared words of a longer message are as telling as most words of a short one.
        return self.coverage >= 0.75 or (self.matched >= 3 and self.coverage >= 0.5) or self.cosine >= RELEVANT_COSINE


Found = tuple[list[Hit], list[Hit]]  # a search's ranked message hits and summary hits


def interleave(founds: list[Found]) -> Found:
    """The searches of a question asked in parts, taken in turns (each one's best, then each one's second, …),
    each hit once: every part gets its share of the budget, whichever part's scores run higher."""
    messages = _in_turns([found[0] for found in founds], lambda h: h.message_id)
    summaries = _in_turns([found[1] for found in founds], lambda h: (h.user_id, h.at))
    return messages, summaries


def distinct(hits: list[Hit]) -> list[Hit]:
    """Hits without repeats of what a better hit says in the same words (people say "love that for you" and "tattoo
    regret stories?" again and again): a repeat adds nothing to what the model receives but takes a place in it."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        said = " ".join(WORD.findall(hit.text.casefold()))
        if said and said in seen:
            continue
        seen.add(said)
        kept.append(hit)
    return kept


def _in_turns(ranked: list[list[Hit]], key: Callable[[Hit], object]) -> list[Hit]:
    seen: set[object] = set()
    merged: list[Hit] = []
    for row in itertools.zip_longest(*ranked):
        for hit in row:
            if hit is not None and key(hit) not in seen:
                seen.add(key(hit))
                merged.append(hit)
    return merged


def rank_messages(
    guild_id: int,
    terms: Sequence[str],
    turns: list[Turn],
    cosine: dict[int, float],
    *,
    now: datetime,
    window: tuple[datetime, datetime] | None,
    members: dict[int, set[str]],
    half_life_days: float,
    words: bool = True,
    counted: dict[int, Counts] | None = None,
    recent: tuple[datetime, datetime] | None = None,
    asking: bool = True,
    priors: dict[int, float] | None = None,
) -> list[Hit]:
    """Every candidate scored (see the module's docstring), best first; `words`: whether the words count at
    all; `recent`: the recent part of the guild's span, for a question that asks about lately; `asking`: whether a
    message that asks is ranked below one that tells. `counted` and `priors`: what was worked out already for some
    candidates of this question, by message id (its texts' counts, what its who and when add), and where what this
    ranking works out is kept for the next (a search ranks its candidates twice, before and after its feedback
    search: the second pass redid about a quarter of the work under a profiler)."""
    if not turns:
        return []
    stems = {stem(w) for w in terms}
    counted = {} if counted is None else counted
    priors = {} if priors is None else priors
    docs = []
    for turn in turns:
        if (doc := counted.get(turn.message_id)) is None:
            doc = counted[turn.message_id] = counts_of(stems, turn.text)
        docs.append(doc)
    lexical = bm25_of(stems, docs) if words else [0.0] * len(turns)
    top_text = max(lexical) or 1.0
    cosines = [cosine.get(t.message_id, 0.0) for t in turns]
    top_cos = max(cosines) if cosines else 0.0
    rate = math.log(2) / half_life_days if half_life_days > 0 else 0.0
    hits = []
    for turn, doc, lex, cos in zip(turns, docs, lexical, cosines, strict=True):
        meaning = max(0.0, cos - COSINE_FLOOR) / max(1e-9, top_cos - COSINE_FLOOR) if top_cos > COSINE_FLOOR else 0
        if (prior := priors.get(turn.message_id)) is None:
            prior = priors[turn.message_id] = _priors(turn, members, window, recent, asking)
        score = TEXT_WEIGHT * lex / top_text + VECTOR_WEIGHT * meaning + prior
        age = max(0.0, (now - turn.at).total_seconds() / 86400)
        score += RECENCY * math.exp(-rate * age)
        matched = len(doc[1])
        coverage = matched / len(stems) if stems else 0.0
        hits.append(
            Hit("message", guild_id, turn.user_id, turn.text, turn.at, score, turn.channel_id, turn.message_id,
                turn.reply_to_id, coverage, cos, matched)
        )  # fmt: skip
    hits.sort(key=lambda h: (-round(h.score, 9), -h.at.timestamp(), h.message_id or 0))
    return hits


def rank_summaries(guild_id: int, terms: Sequence[str], rows: list[SummaryRow], tz: ZoneInfo) -> list[Hit]:
    """Summaries scored by BM25 within their pool (the best is 1), best first; each dated noon of its day."""
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


def _priors(
    turn: Turn,
    members: dict[int, set[str]],
    window: tuple[datetime, datetime] | None,
    recent: tuple[datetime, datetime] | None,
    asking: bool,
) -> float:
    """What the question's who and when add to a candidate's score, and what its asking takes away."""
    score = 0.0
    if members and any(_about(turn, member, names) for member, names in members.items()):
        score += WHO_BONUS
    if window is not None and window[0] <= turn.at < window[1]:
        score += WHEN_BONUS
    if recent is not None and recent[0] <= turn.at < recent[1]:
        score += RECENT_BONUS
    if asking and _ASKS.search(turn.text):
        score -= ASKING_PENALTY
    return score


def _about(turn: Turn, member: int, names: set[str]) -> bool:
    """Their own message, or one about them (a mention or their name, not only as the one spoken to)."""
    if turn.user_id == member:
        return True
    mentioned = {int(m) for m in MENTION.findall(turn.text)}
    if member in mentioned:
        return True
    return any(name in turn.text.lower() and not addressed_only(turn.text, name) for name in names)
