"""Retrieval baselines and offline embeddings on the recall benchmark guild (`bench.conversations`).

In-memory retrievers rank every message for each question; the packer renders hits in rank order as
`2026-03-04 Ana: text` lines until a token budget (default 2,000, counted with `bot.llm.tokens.estimate_tokens`)
is full. Per question type and overall it reports
  all-evidence hit   share of questions whose evidence messages are all in the packed text
  evidence recall    share of evidence messages in the packed text

Retrievers (components can be combined; see `CONFIGS`):
  bm25        Okapi BM25 (k1 1.2, b 0.75) over single messages, Snowball stems, stopwords removed
  emb         cosine similarity with one offline embedding model (`bench.offline_embedders`)
  fuse        hybrid of both: min-max normalised 0.5/0.5 score fusion, or reciprocal rank fusion (k 60)
  +nb         the message before and after each hit in its channel (adjacent ones merge)
  +links      the message a hit replies to, and the replies to it
  +who        a bonus for messages written by a member the question names
  +when       a bonus for messages inside the time window a question names ("in march", "two months ago")
  +recency    a gentle bonus for newer messages

    python -m bench.retrieval_study                              # small profile, all models
    python -m bench.retrieval_study --models wordllama-256 --markdown /tmp/table.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.conversation_guild import MONTHS, STOPWORDS, Question
from bench.conversation_stories import REPORTED, score_keys
from bench.conversations import Conversation, generate
from bench.offline_embedders import EMBEDDERS
from bot.llm.tokens import estimate_tokens

CACHE = Path("/tmp/elefant-retrieval-cache")
_WORD = re.compile(r"[a-z0-9]+")
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_BOT_PREFIX = re.compile(r"^(hey elefant,?|@elefant|elefant,?|quick q:|random q but)\s*", re.IGNORECASE)


def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


STEM = _stemmer()


def tokenize(text: str) -> list[str]:
    return STEM.stemWords([w for w in _WORD.findall(text.lower()) if w not in STOPWORDS])


class BM25:
    """Okapi BM25 over an inverted index."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float32)
        self.norm = k1 * (1 - b + b * lengths / max(1e-9, lengths.mean()))
        self.k1 = k1
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                postings[term].append((i, tf))
        self.postings = {
            t: (np.array([i for i, _ in p]), np.array([f for _, f in p], dtype=np.float32)) for t, p in postings.items()
        }

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        for term in set(query):
            if term not in self.postings:
                continue
            ids, tf = self.postings[term]
            idf = math.log(1 + (self.n - len(ids) + 0.5) / (len(ids) + 0.5))
            out[ids] += idf * tf * (self.k1 + 1) / (tf + self.norm[ids])
        return out


@dataclass
class Corpus:
    """The messages with what retrieval and packing need, as arrays indexed by position."""

    conv: Conversation
    texts: list[str]
    lines: list[str]  # rendered "2026-03-04 Ana: text"
    cost: np.ndarray  # tokens per rendered line
    authors: np.ndarray
    days: np.ndarray  # day ordinal of each message
    age_days: np.ndarray
    prev: np.ndarray  # previous message in the same channel (-1: none)
    next: np.ndarray
    parent: np.ndarray  # the message replied to (-1: none)
    children: dict[int, list[int]]
    position: dict[int, int]  # message id -> position
    names: dict[str, int]  # lower-case display name -> member id
    mentions: list[frozenset[int]]  # members named in each message's text

    @classmethod
    def build(cls, conv: Conversation) -> Corpus:
        messages = conv.messages
        names = {m.id: m.name for m in conv.members}
        lowered = {m.name.lower(): m.id for m in conv.members}
        position = {m.message_id: i for i, m in enumerate(messages)}
        texts = [m.text for m in messages]
        lines = [f"{m.timestamp:%Y-%m-%d} {names[m.author_id]}: {m.text}" for m in messages]
        prev = np.full(len(messages), -1)
        nxt = np.full(len(messages), -1)
        last: dict[int, int] = {}
        parent = np.full(len(messages), -1)
        children: dict[int, list[int]] = defaultdict(list)
        for i, m in enumerate(messages):
            if m.channel_id in last:
                prev[i], nxt[last[m.channel_id]] = last[m.channel_id], i
            last[m.channel_id] = i
            if m.reply_to_id in position:
                parent[i] = position[m.reply_to_id]
                children[parent[i]].append(i)
        return cls(
            conv,
            texts,
            lines,
            np.array([estimate_tokens(line) for line in lines]),
            np.array([m.author_id for m in messages]),
            np.array([m.timestamp.toordinal() for m in messages]),
            np.array([(conv.now - m.timestamp).total_seconds() / 86400 for m in messages]),
            prev,
            nxt,
            parent,
            children,
            position,
            {m.name.lower(): m.id for m in conv.members},
            [frozenset(lowered[w] for w in _WORD.findall(t.lower()) if w in lowered) for t in texts],
        )


# ---- what a question says about who and when ------------------------------------------------------------------------


def clean_question(text: str) -> str:
    return _BOT_PREFIX.sub("", text).strip()


def named_members(question: str, corpus: Corpus) -> set[int]:
    words = set(_WORD.findall(question.lower()))
    return {member for name, member in corpus.names.items() if name in words}


def strip_names(question: str, corpus: Corpus) -> str:
    pattern = r"\b(" + "|".join(map(re.escape, corpus.names)) + r")(?:'s)?\b"
    return " ".join(re.sub(pattern, " ", question, flags=re.IGNORECASE).split())


def time_window(question: str, now: datetime) -> tuple[datetime, datetime] | None:  # noqa: PLR0911
    """The period a question names, if any: a month, "N months ago", a season, christmas, a year ago."""
    q = question.lower()
    match = re.search(r"\b(\d+|two|three|four|five|six|seven|eight|nine|ten) months? (?:ago|back)\b", q)
    if match:
        n = _NUMBERS.get(match.group(1)) or int(match.group(1))
        return now - timedelta(days=(n + 0.6) * 30.44), now - timedelta(days=(n - 0.6) * 30.44)
    if "a year ago" in q:
        return now - timedelta(days=410), now - timedelta(days=320)
    if "christmas" in q:
        year = now.year if now.month == 12 and now.day > 26 else now.year - 1
        return datetime(year, 12, 15, tzinfo=UTC), datetime(year + 1, 1, 6, tzinfo=UTC)
    if "summer" in q:
        year = now.year if now.month > 8 else now.year - 1
        return datetime(year, 6, 1, tzinfo=UTC), datetime(year, 9, 1, tzinfo=UTC)
    if "spring" in q:
        year = now.year if now.month > 5 else now.year - 1
        return datetime(year, 3, 1, tzinfo=UTC), datetime(year, 6, 1, tzinfo=UTC)
    for index, month in enumerate(MONTHS, start=1):
        if re.search(rf"\b{month}\b", q) and not (month == "may" and re.search(r"\bmay (i|we|you)\b", q)):
            year = now.year if index < now.month else now.year - 1
            start = datetime(year, index, 1, tzinfo=UTC)
            return start, (start + timedelta(days=32)).replace(day=1)
    return None


# ---- rankers --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    name: str
    bm25: bool = False
    model: str | None = None
    fusion: str = "score"  # "score" (min-max 0.5/0.5) or "rrf"
    neighbours: bool = False
    links: bool = False
    who: float = 0.0  # person prior: bonus for messages by a member the question names
    mention: float = 0.0  # ... or for messages whose text names that member
    strip: bool = False  # drop member names from the query text (the who bonus carries them)
    when: float = 0.0  # bonus for messages inside the time window the question names
    recency: bool = False
    author_in_text: bool = False  # index and embed "Name: text" instead of the text
    nb_top: int = 0  # neighbours for the first nb_top hits only (when `neighbours` is off)


class Study:
    def __init__(self, corpus: Corpus, models: list[str]) -> None:
        self.corpus = corpus
        self.bm25 = BM25([tokenize(t) for t in corpus.texts])
        names = {m.id: m.name for m in corpus.conv.members}
        self.authored = [f"{names[a]}: {t}" for a, t in zip(corpus.authors, corpus.texts, strict=True)]
        self.bm25_authored = BM25([tokenize(t) for t in self.authored])
        self.embedders = {}
        self.vectors: dict[tuple[str, bool], np.ndarray] = {}
        self.cost: dict[str, dict] = {}
        self.queries: dict[tuple[str, str], np.ndarray] = {}
        for model in models:
            self.embedders[model] = EMBEDDERS[model]()
            self.vectors[model, False] = self._embed_corpus(model, corpus.texts, "text")

    def _embed_corpus(self, model: str, texts: list[str], tag: str) -> np.ndarray:
        conv = self.corpus.conv
        digest = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:12]
        path = CACHE / f"{model}-{tag}-{conv.seed}-{conv.message_count}-{digest}.npy"
        if path.exists():
            if tag == "text" and path.with_suffix(".json").exists():
                self.cost[model] = json.loads(path.with_suffix(".json").read_text())
            return np.load(path)
        started, cpu = time.perf_counter(), time.process_time()
        vectors = self.embedders[model].embed(texts)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        if tag == "text":
            self.cost[model] = {"wall_per_1k": wall / len(texts) * 1000, "cpu_per_1k": cpu / len(texts) * 1000}
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
        if tag == "text":
            path.with_suffix(".json").write_text(json.dumps(self.cost[model]))
        return vectors

    def scores(self, config: Config, question: Question) -> np.ndarray:
        corpus, text = self.corpus, clean_question(question.text)
        query_text = strip_names(text, corpus) if config.strip else text
        parts: list[np.ndarray] = []
        if config.bm25:
            index = self.bm25_authored if config.author_in_text else self.bm25
            parts.append(index.scores(tokenize(query_text)))
        if config.model:
            key = (config.model, query_text)
            if key not in self.queries:
                self.queries[key] = self.embedders[config.model].embed([query_text])[0]
            query = self.queries[key]
            if (config.model, config.author_in_text) not in self.vectors:  # "Name: text" vectors, on first use
                self.vectors[config.model, True] = self._embed_corpus(config.model, self.authored, "authored")
            parts.append(self.vectors[config.model, config.author_in_text] @ query)
        if config.fusion == "rrf" and len(parts) > 1:
            fused = np.zeros(len(corpus.texts), dtype=np.float32)
            for part in parts:
                ranks = np.empty(len(part), dtype=np.float32)
                ranks[np.argsort(-part, kind="stable")] = np.arange(len(part))
                fused += 1.0 / (60 + ranks)
            parts = [fused]
        fused = sum(_minmax(p) for p in parts) / len(parts)
        if config.who and (members := named_members(text, corpus)):
            person = config.who * np.isin(corpus.authors, list(members))
            if config.mention:  # by the member or naming them, whichever weighs more
                person = np.maximum(person, config.mention * np.array([bool(m & members) for m in corpus.mentions]))
            fused = fused + person
        if config.when and (window := time_window(text, corpus.conv.now)):
            lo, hi = window[0].toordinal(), window[1].toordinal()
            fused = fused + config.when * ((corpus.days >= lo) & (corpus.days < hi))
        if config.recency:
            fused = fused + 0.05 * np.exp(-corpus.age_days / 60)
        return fused

    def pack(self, config: Config, ranked: np.ndarray, budget: int) -> set[int]:
        corpus, packed, used = self.corpus, set(), 0
        for rank, hit in enumerate(ranked):
            block = [int(hit)]
            if config.neighbours or rank < config.nb_top:
                block = [int(corpus.prev[hit]), int(hit), int(corpus.next[hit])]
            if config.links:
                block += [int(corpus.parent[hit]), *corpus.children.get(int(hit), [])]
            for i in block:
                if i < 0 or i in packed:
                    continue
                if used + corpus.cost[i] > budget:
                    return packed
                packed.add(i)
                used += int(corpus.cost[i])
        return packed


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def evaluate(study: Study, config: Config, budget: int) -> dict[str, tuple[float, float]]:
    """Per type and overall: (all-evidence hit, evidence recall)."""
    hits: dict[str, list[int]] = defaultdict(list)
    found: dict[str, list[int]] = defaultdict(list)
    for question in study.corpus.conv.questions:
        scores = study.scores(config, question)
        ranked = np.argsort(-scores, kind="stable")[:600]
        packed = study.pack(config, ranked, budget)
        present = [study.corpus.position[e] in packed for e in question.evidence_ids]
        for key in score_keys(question.type):
            hits[key].append(all(present))
            found[key] += present
    return {k: (float(np.mean(hits[k])), float(np.mean(found[k]))) for k in hits}


def configs(models: list[str], who: float = 1.0, when: float = 1.0) -> list[Config]:
    """Baselines, each model alone and in hybrids, then the full combination and its ablations."""
    priors = {"links": True, "who": who, "mention": who, "strip": True, "when": when}
    out = [
        Config("bm25", bm25=True),
        Config("bm25 +nb", bm25=True, neighbours=True),
        Config("bm25 +links +who +strip +when", bm25=True, **priors),
        Config("bm25 +nb +links +who +strip +when", bm25=True, neighbours=True, **priors),
    ]
    for m in models:
        full = Config(f"**{m} full** (hybrid +links +who +strip +when)", bm25=True, model=m, **priors)
        out += [
            Config(f"{m}", model=m),
            Config(f"{m} +nb", model=m, neighbours=True),
            Config(f"hybrid {m} 0.5/0.5", bm25=True, model=m),
            Config(f"hybrid {m} 0.5/0.5 +nb", bm25=True, model=m, neighbours=True),
            Config(f"hybrid {m} rrf +nb", bm25=True, model=m, fusion="rrf", neighbours=True),
            Config(f"hybrid {m} 0.5/0.5 +nb +recency", bm25=True, model=m, neighbours=True, recency=True),
            full,
            replace(full, name=f"  {m} full, no bm25", bm25=False),
            replace(full, name=f"  {m} full, rrf", fusion="rrf"),
            replace(full, name=f"  {m} full, +nb", neighbours=True),
            replace(full, name=f"  {m} full, +nb for the top 10 hits", nb_top=10),
            replace(full, name=f"  {m} full, no reply links", links=False),
            replace(full, name=f"  {m} full, no who (person prior)", who=0.0, mention=0.0),
            replace(full, name=f"  {m} full, no name stripping", strip=False),
            replace(full, name=f"  {m} full, no when", when=0.0),
            replace(full, name=f"  {m} full, who/when 0.2", who=0.2, mention=0.2, when=0.2),
            replace(full, name=f"  {m} full, who/when 0.5", who=0.5, mention=0.5, when=0.5),
            replace(full, name=f"  {m} full, who: author only (no mention)", mention=0.0),
            replace(full, name=f"  {m} full, +recency", recency=True),
            replace(full, name=f"  {m} full, author in text", author_in_text=True),
        ]
    return out


def table(rows: list[tuple[str, dict[str, tuple[float, float]]]], metric: int) -> str:
    head = "| retriever | " + " | ".join(REPORTED) + " |"
    lines = [head, "|" + "---|" * (len(REPORTED) + 1)]
    for name, result in rows:
        cells = [f"{result[k][metric]:.2f}" if k in result else "–" for k in REPORTED]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--profile", default="small")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--models", default=",".join(EMBEDDERS), help="comma-separated: " + ", ".join(EMBEDDERS))
    parser.add_argument("--only", default="", help="comma-separated: run only configs whose name contains one")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    started = time.perf_counter()
    conv = generate(args.profile if not args.profile.isdigit() else int(args.profile), args.seed)
    corpus = Corpus.build(conv)
    study = Study(corpus, models)
    took = time.perf_counter() - started
    print(f"{len(corpus.texts):,} messages, {len(conv.questions)} questions, built in {took:.0f} s")
    for model, cost in study.cost.items():
        print(f"  {model}: {cost['cpu_per_1k']:.2f} s CPU, {cost['wall_per_1k']:.2f} s wall per 1,000 messages")
    rows = []
    for config in configs(models):
        if args.only and not any(part == config.name or part in config.name for part in args.only.split(",")):
            continue
        result = evaluate(study, config, args.budget)
        rows.append((config.name, result))
        print(
            f"{config.name:<52} all-evidence {result['overall'][0]:.2f}  recall {result['overall'][1]:.2f}", flush=True
        )
    text = (
        f"All-evidence hit at {args.budget} tokens\n\n{table(rows, 0)}\n\n"
        f"Evidence recall at {args.budget} tokens\n\n{table(rows, 1)}\n"
    )
    print("\n" + text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
