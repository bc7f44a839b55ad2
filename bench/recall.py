"""Recall benchmark: a generated multi-month guild with planted facts, and questions whose answers are weeks old.

Prints, measured in one run on SQLite:
  recall@5            the planted message is among the first five hits of the bot's recall for its question
  answer-in-context   the planted message is inside the context assembled at a 2,000-token budget
                      (recalled snippets + the newest messages), beside the baseline "the newest messages
                      that fit in 2,000 tokens"
  latency p50 / p99   of MemoryManager.recall over the questions and random content words

    python -m bench.recall                       # 1,000,000 messages
    python -m bench.recall --messages 10000000   # the 10 M run (about 20 minutes to build here)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tqdm import tqdm

from bench.common import sqlite_engine
from bot.llm.budget import Section, assemble
from bot.llm.tokens import estimate_tokens
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.reply import cite
from bot.reply.routing import Request
from bot.settings import Settings

_INSERT = (
    "INSERT INTO chat_history (message_id, guild_id, channel_id, user_id, message_text, timestamp, "
    "edited_at, reply_to_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
GUILD = 2**60 + 9000
CHANNELS = [2**60 + 9100 + i for i in range(6)]
NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
BUDGET = 2000
NAMES = [
    "Ana",
    "Bob",
    "Carla",
    "Dmitri",
    "Eve",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kofi",
    "Lena",
    "Mateo",
    "Nia",
    "Oskar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tove",
    "Uma",
    "Viktor",
    "Wen",
    "Xena",
    "Yusuf",
    "Zoe",
    "Aiko",
    "Bram",
    "Chidi",
    "Dana",
    "Emil",
    "Fatima",
    "Goran",
    "Hana",
    "Ivo",
    "Jade",
    "Kai",
    "Lior",
    "Mina",
    "Noor",
]
MEMBERS = [2**60 + 5000 + i for i in range(len(NAMES))]  # their user ids, in the same order
# (what the member writes, what someone later asks): answers planted 15–110 days back.
PLANTS = [
    ("my chemistry exam is on the {n}th, wish me luck", "when is {name}'s chemistry exam?"),
    ("I finally signed the lease for the flat on {street} street", "where is {name}'s new flat?"),
    ("we decided the summer trip goes to {city} by night train", "what did {name} decide about the summer trip?"),
    ("my sister's wedding is in {city} on the {n}th", "when is {name}'s sister's wedding?"),
    ("I switched my thesis topic to {topic}", "what is {name}'s thesis topic now?"),
    ("the dentist moved my appointment to the {n}th", "when is {name}'s dentist appointment?"),
    ("I adopted a cat, her name is {pet}", "what is the name of {name}'s cat?"),
    ("my bike got stolen near the {street} station", "where did {name}'s bike get stolen?"),
]
FILL = {
    "n": [str(i) for i in range(3, 29)],
    "street": ["Maple", "Harbor", "Linden", "Quarry", "Orchard"],
    "city": ["Lisbon", "Porto", "Krakow", "Ghent", "Bergen"],
    "pet": ["Miso", "Pixel", "Juniper", "Tofu"],
    "topic": ["soil microbes", "tidal energy", "medieval trade", "graph databases"],
}


def vocabulary(rng: random.Random, size: int = 6000) -> tuple[list[str], list[float]]:
    """Made-up words with Zipf frequencies, plus the topic words at realistic (low) rates."""
    syllables = ["ka", "lo", "mi", "ren", "ta", "vo", "shi", "pa", "dor", "el", "qu", "ni", "sa", "tor", "bu"]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size * 2)})
    rng.shuffle(words)
    words = words[:size]
    common = ["the", "a", "to", "and", "is", "it", "you", "that", "of", "in", "i", "we", "lol", "ok", "so"]
    topical = [
        "exam",
        "trip",
        "flat",
        "wedding",
        "thesis",
        "dentist",
        "cat",
        "bike",
        "train",
        "sister",
        "lease",
        "appointment",
        "topic",
        "station",
        "summer",
        "stolen",
        "luck",
        "decided",
    ]
    vocab = common + topical + words
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    for i in range(len(common), len(common) + len(topical)):
        weights[i] = 1 / 400  # topic words show up in everyday chatter now and then
    return vocab, list(itertools.accumulate(weights))  # cumulative: random.choices is O(n) per call otherwise


@dataclass
class Plant:
    message_id: int
    text: str
    question: str
    author: int


def build(path: Path, total: int, days: int, seed: int, *, write: bool = True, now: datetime = NOW) -> list[Plant]:
    """Write `total` messages straight into the migrated file (the triggers index them for search), the newest
    at `now`."""
    rng = random.Random(seed)
    vocab, weights = vocabulary(rng)
    plants, special = _plan(rng, vocab, weights, total, days)
    if not write:  # the same plants, for a database built earlier with the same arguments
        return [
            Plant(2**60 + 10**8 + next(i for i, (_, t) in special.items() if t == p.text), p.text, p.question, p.author)
            for p in plants
        ]
    ids = _write(path, total, days, now, special=special, filler=lambda: _filler(rng, vocab, weights))
    return [Plant(ids[p.text], p.text, p.question, p.author) for p in plants]


def _plan(
    rng: random.Random, vocab: list[str], weights: list[float], total: int, days: int
) -> tuple[list[Plant], dict[int, tuple[int, str]]]:
    """The 32 planted answers and their distractors, by the row index each lands at."""
    users = MEMBERS
    plants: list[Plant] = []
    special: dict[int, tuple[int, str]] = {}  # row index -> (author, text)

    def place(age_days: float, author: int, text: str) -> None:
        index = min(total - 1, int(total * (1 - age_days / days)))
        while index in special:
            index -= 1
        special[index] = (author, text)

    for i in range(32):
        template, question = PLANTS[i % len(PLANTS)]
        author = users[(i * 7) % len(users)]
        text = template.format(**{k: rng.choice(v) for k, v in FILL.items()})
        while any(p.text == text for p in plants):
            text = template.format(**{k: rng.choice(v) for k, v in FILL.items()})
        place(rng.uniform(15, min(110, days - 1)), author, text)
        plants.append(Plant(0, text, question.format(name=NAMES[users.index(author)]), author))
        for _ in range(4):  # others talk about the same things, some of it recently
            words = text.split()
            distractor = " ".join([*rng.choices(vocab, cum_weights=weights, k=5), rng.choice(words), rng.choice(words)])
            place(rng.uniform(0.5, 40), rng.choice([u for u in users if u != author]), distractor)
    return plants, special


def _filler(rng: random.Random, vocab: list[str], weights: list[float]) -> tuple[int, str]:
    """An ordinary message: a few members write most of them."""
    author = MEMBERS[min(int(rng.paretovariate(1.2)) - 1, len(MEMBERS) - 1)]
    return author, " ".join(rng.choices(vocab, cum_weights=weights, k=rng.randint(4, 14)))


def _write(
    path: Path,
    total: int,
    days: int,
    now: datetime,
    *,
    special: dict[int, tuple[int, str]],
    filler: Callable[[], tuple[int, str]],
) -> dict[str, int]:
    """Insert the rows in batches; the planted texts' message ids."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=OFF")
    start = now - timedelta(days=days)
    step = timedelta(days=days) / total
    batch: list[tuple[object, ...]] = []
    ids = {}
    with tqdm(total=total, desc="messages", unit="msg", unit_scale=True) as bar:
        for i in range(total):
            at = start + step * i
            if i in special:
                author, text = special[i]
                ids[text] = 2**60 + 10**8 + i
            else:
                author, text = filler()
            when = at.replace(tzinfo=None).isoformat(" ", "microseconds")
            batch.append((2**60 + 10**8 + i, GUILD, CHANNELS[i % len(CHANNELS)], author, text, when, None, None))
            if len(batch) == 20_000:
                connection.executemany(_INSERT, batch)
                connection.commit()
                bar.update(len(batch))
                batch.clear()
        connection.executemany(_INSERT, batch)
        connection.commit()
        bar.update(len(batch))
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return ids


def newest_that_fit(rows: list[str], budget: int) -> str:
    """The baseline: the newest messages, newest last, as many as fit."""
    kept: list[str] = []
    for line in rows:
        if estimate_tokens("\n".join([line, *kept])) > budget:
            break
        kept.insert(0, line)
    return "\n".join(kept)


def pct(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


@dataclass
class Figures:
    messages: int
    questions: int
    recall_at_5: float
    in_context: float
    in_baseline: float
    p50_ms: float
    p99_ms: float
    queries: int

    def table(self) -> str:
        return "\n".join(
            [
                f"| {self.messages:,} messages, {self.questions} questions (answers 15–110 days old) "
                "| Elefant | baseline |",
                "|---|---|---|",
                f"| recall@5 | {self.recall_at_5:.2f} | — |",
                f"| answer in the {BUDGET:,}-token context | {self.in_context:.2f} | {self.in_baseline:.2f} |",
                f"| recall latency p50 / p99 ({self.queries} queries) | {self.p50_ms:.1f} / {self.p99_ms:.1f} ms | — |",
            ]
        )


async def measure(args: argparse.Namespace) -> Figures:
    directory = Path(args.dir or tempfile.mkdtemp(prefix="elefant-recall-"))
    async with sqlite_engine(directory, reuse=args.reuse) as engine:
        path = Path(str(engine.url.database))
        began = time.perf_counter()
        plants = build(path, args.messages, args.days, args.seed, write=args.reuse is None)
        size = (await asyncio.to_thread(path.stat)).st_size
        print(
            f"{'reused' if args.reuse else 'built'} {args.messages:,} messages over {args.days} days in "
            f"{time.perf_counter() - began:.0f} s ({size / 2**20:,.0f} MB)"
        )
        settings = Settings(_env_file=None, database_url=str(engine.url), gemini_api_key=None)
        memory = MemoryManager(engine, settings, clock=FakeClock(NOW))
        await memory.start()
        for i, name in enumerate(NAMES):
            await memory.intake.member(GUILD, MEMBERS[i], name, name.lower())
        found, in_context, in_baseline = await _answers(memory, plants, await _newest(memory), verbose=args.verbose)
        timings, queries = await _latencies(memory, plants, args.seed)
        await memory.close()

    n = len(plants)
    return Figures(
        args.messages, n, found / n, in_context / n, in_baseline / n, pct(timings, 50), pct(timings, 99), queries
    )


async def _newest(memory: MemoryManager) -> list[str]:
    """The guild's 2,000 newest messages as "name: text", newest first (what the baseline keeps from)."""
    async with memory.sessions() as session:
        from sqlalchemy import text

        return [
            f"{name}: {body}"
            for name, body in await session.execute(
                text(
                    "SELECT m.display_name, c.message_text FROM chat_history c JOIN member_names m "
                    "ON m.guild_id = c.guild_id AND m.user_id = c.user_id ORDER BY c.timestamp DESC LIMIT 2000"
                )
            )
        ]


async def _answers(
    memory: MemoryManager, plants: list[Plant], newest: list[str], *, verbose: bool
) -> tuple[int, int, int]:
    """How many answers recall found in its top 5, how many reached the context, and how many the baseline holds."""
    baseline = newest_that_fit(newest, BUDGET)
    found = in_context = in_baseline = 0
    for plant in plants:
        request = Request(GUILD, 2**60 + 4999, plant.question, channel_id=CHANNELS[0])
        hits = await cite.find(memory.recollection, request, now=NOW, limit=5)
        hit = any(h.message_id == plant.message_id for h in hits)
        found += hit
        if verbose and not hit:
            age = next(iter(await memory.recollection.recall(GUILD, plant.text, now=NOW, limit=1)), None)
            print(f"MISS {plant.question!r} -> {plant.text!r} ({age and age.label(NOW, 'UTC')})")
            for h in hits:
                print(f"    {h.score:.3f} {h.label(NOW, 'UTC')} {h.user_id % 1000} {h.text[:70]!r}")
        cited = await cite.cite(memory.directory, hits, NOW)
        context = assemble(
            [
                Section("Recalled", items=cited, share=0.5),
                Section("Recent conversation", "\n".join(reversed(newest)), share=0.5, keep="end"),
            ],
            BUDGET,
        )
        assert estimate_tokens(context) <= BUDGET
        in_context += plant.text in context
        in_baseline += plant.text in baseline
    return found, in_context, in_baseline


async def _latencies(memory: MemoryManager, plants: list[Plant], seed: int) -> tuple[list[float], int]:
    """Milliseconds of each recall: the questions, then 300 two-word queries; and how many there were."""
    rng = random.Random(seed + 1)
    vocab, _ = vocabulary(random.Random(seed))
    queries = [p.question for p in plants] + [" ".join(rng.sample(vocab[15:800], 2)) for _ in range(300)]
    await memory.recollection.recall(GUILD, queries[0], now=NOW)  # warm the page cache once
    timings = []
    for query in queries:
        began = time.perf_counter()
        await memory.recollection.recall(GUILD, query, now=NOW, limit=10)
        timings.append((time.perf_counter() - began) * 1000)
    return timings, len(queries)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--verbose", action="store_true", help="print the questions whose answer was missed")
    parser.add_argument("--reuse", type=Path, help="a database file built earlier with the same arguments")
    parser.add_argument("--dir", help="where to build the database (default: a temporary directory)")
    parser.add_argument(
        "--conversations",
        action="store_true",
        help="the conversation benchmark (bench/conversation_recall.py) instead of planted facts",
    )
    parser.add_argument("--profile", default="small", help="with --conversations: small, large or a message count")
    parser.add_argument("--budget", type=int, default=2000, help="with --conversations: tokens the model receives")
    return parser.parse_args(argv)


def main() -> None:
    args = parse()
    if args.conversations:
        from bench import conversation_recall

        profile = int(args.profile) if str(args.profile).isdigit() else args.profile
        asyncio.run(conversation_recall.run(profile, budget=args.budget, database=args.reuse))
        return
    print("\n" + asyncio.run(measure(parse())).table())


if __name__ == "__main__":
    main()
