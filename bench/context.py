"""Context benchmark: cold contexts with and without the past summarised, day one of a guild, the summary
scheduler's cost per guild-day, warm get_memories, and context size as history grows.

The model is the Gemini stub (fakes/gemini_stub.py) at a fixed latency, reached by the real google-genai client.
Its summaries grow with what they summarise (a day's summary of a member quotes more of a busier day, a history
keeps about half of its days), as a real model's do; nothing is summarised by hand: the scheduler does it.
Run: python -m bench.context [--users 200] [--days 30] [--per-day 2000] [--latency 0.2] [--sizes 1000,...]
"""

from __future__ import annotations

import argparse
import asyncio
import html
import re
import shutil
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import print_table, sqlite_engine
from bench.context_report import rows
from bot.llm.client import LLM
from bot.llm.offline import OfflineProvider
from bot.llm.tokens import estimate_tokens
from bot.llm.usage import UsageRecorder
from bot.memory.clock import FakeClock, day_bounds
from bot.memory.manager import MemoryManager
from bot.memory.summaries.scheduler import Pass
from bot.memory.types import IncomingMessage
from bot.settings import Settings
from db.engine import create_session_factory
from fakes.gemini_stub import GeminiStub, Reply, StubRequest, as_json, text
from fakes.model_doubles import scripted_model
from fakes.models import model_stack

GUILD = 2**60
NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
MEASURED = 5  # members whose cold contexts are timed
WARMED = 20  # more members, for the cache bytes
WORDS = [
    "trip",
    "exam",
    "game",
    "movie",
    "pizza",
    "deadline",
    "concert",
    "bug",
    "release",
    "coffee",
    "holiday",
    "match",
]
_MESSAGE = re.compile(r"<author_id>(\d+)</author_id><author>([^<]*)</author><content>([^<]*)</content>")
_DAY = re.compile(r'<day date="([^"]+)">([^<]*)</day>')
_DAY_OF_BATCH = re.compile(r"\((\d{4}-\d{2}-\d{2}), times in")


def activity_model(request: StubRequest) -> Reply:
    """The scripted model, except that summaries grow with their input, as a real model's do: a member's day
    quotes about one message in three (the bot keeps 600 characters of it), a history keeps about half of
    each day it covers (at most 1,500 characters)."""
    prompt = request.prompt_text
    if "<transcript>" in prompt:
        said: dict[str, list[str]] = {}
        for author_id, _, content in _MESSAGE.findall(prompt):
            said.setdefault(author_id, []).append(html.unescape(content))
        return as_json(
            {
                "summaries": [
                    {"user_id": uid, "summary": f"wrote {len(lines)} messages: " + "; ".join(lines[::3])}
                    for uid, lines in said.items()
                ]
            }
        )
    if '<day date="' in prompt:
        days = [(d, html.unescape(t)) for d, t in _DAY.findall(prompt)]
        return text(("History: " + " | ".join(f"{d}: {t[: max(40, len(t) // 2)]}" for d, t in days))[:1500])
    return scripted_model(request)


def client_for(stub: GeminiStub, sessions: Any = None) -> LLM:
    """The real client against the stub, with the production resilience settings (limits that do not bind)."""
    return model_stack(
        stub.base_url,
        attempts=2,
        timeout_s=30,
        concurrency=8,
        breaker_failures=50,
        wait=(1.0, 30.0),
        offline=OfflineProvider(),
        usage=UsageRecorder(sessions) if sessions is not None else None,
    )


def member(u: int) -> int:
    return GUILD + 100 + u


async def fill(memory: MemoryManager, *, users: int, days: int, per_day: int) -> None:
    """`per_day` messages a day from `users` members over the `days` days before NOW, and half a day today."""
    step = timedelta(seconds=max(1, 16 * 3600 // per_day))
    for d in range(days, -1, -1):
        start = NOW.replace(hour=1) - timedelta(days=d)
        for i in range(per_day if d else per_day // 2):
            u = (i * 7 + d) % users
            await memory.intake.message(
                IncomingMessage(
                    GUILD,
                    GUILD + 1,
                    GUILD + 10_000_000 + d * 1_000_000 + i,
                    member(u),
                    f"user{u}",
                    f"day {d} message {i}: talking about the {WORDS[(i + u) % len(WORDS)]} with friends",
                    start + step * i,
                ),
                wait=True,  # a bulk load: back-pressure, not the spill file
            )
    await memory.flush()


class Bench:
    """One guild's database, copied at each stage, and the stub whose requests are the model calls."""

    def __init__(self, args: argparse.Namespace, stub: GeminiStub, directory: Path) -> None:
        self.args = args
        self.stub = stub
        self.directory = directory
        self.backlog_calls = 0

    def calls(self) -> int:
        return len(self.stub.requests)

    def copy(self, source: str, target: str) -> Path:
        for suffix in ("", "-wal", "-shm"):
            if (self.directory / (source + suffix)).exists():
                shutil.copy(self.directory / (source + suffix), self.directory / (target + suffix))
        return self.directory / target

    async def on(
        self, name: str, work: Callable[[MemoryManager], Awaitable[Any]], *, at: datetime = NOW, **overrides: Any
    ) -> Any:
        """Run `work` in a fresh process-like MemoryManager on database `name` (empty caches, like a restart)."""
        async with sqlite_engine(self.directory, reuse=self.directory / name) as engine:
            llm = client_for(self.stub, create_session_factory(engine))
            settings = Settings(_env_file=None, context_token_budget=2000, **overrides)  # type: ignore[call-arg]
            memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(at))
            await memory.start(background=False)
            try:
                return await work(memory)
            finally:
                await memory.close()
                await llm.close()


def behind(request: StubRequest) -> bool:
    """A call for the rollups built in the background (a day, or days, older than the last week)."""
    week = (NOW - timedelta(days=6)).date().isoformat()
    days = _DAY.findall(request.prompt_text) or [(d, "") for d in _DAY_OF_BATCH.findall(request.prompt_text)]
    return bool(days) and all(day < week for day, _ in days)


async def cold(bench: Bench, memory: MemoryManager, users: range) -> tuple[list[int], list[float], int]:
    """Model calls and time of each member's first context in this process, and the calls made meanwhile by
    the rollups it started building behind (not the context's: it does not wait for them)."""
    calls, times, background = [], [], 0
    for u in users:
        before, started = bench.calls(), time.perf_counter()
        assert await memory.recollection.context(GUILD, member(u))
        times.append(time.perf_counter() - started)
        made = bench.stub.requests[before:]
        background += sum(behind(r) for r in made)
        calls.append(sum(not behind(r) for r in made))
    return calls, times, background


async def day_one(bench: Bench) -> dict[str, Any]:
    """A guild just imported (or a first start): nothing is summarised, the model is busy, a member asks."""
    found: dict[str, Any] = {}

    async def asked(memory: MemoryManager) -> None:
        started = time.perf_counter()
        first = await memory.recollection.context(GUILD, member(0)) or ""  # the guard: MEMORY_WAIT_SECONDS (1 s)
        found["answered"] = time.perf_counter() - started
        found["has"] = {
            "facts": first.startswith("Facts: user0 is vegetarian"),
            "today's extract": "Today: " in first and "day 0 message" in first,
            "the week's": "Last week: " in first and "day 1 message" in first,
        }
        assert memory.scheduler is not None
        await memory.scheduler.catch_up()  # the backlog lands (beside the context build the guard left running)
        memory.settings.memory_wait_seconds = 600
        before = bench.calls()
        later = await memory.recollection.context(GUILD, member(0)) or ""
        found["after"] = (bench.calls() - before, later.startswith("MERGED"))
        assert memory.rollups is not None  # her weeks and months, rolled up behind: let them finish, not be cut
        await memory.rollups.earlier(GUILD, member(0), NOW.date(), wait=True)

    bench.copy("fresh.db", "day-one.db")
    await bench.on("day-one.db", asked)
    bench.copy("fresh.db", "patient.db")  # the same, waiting for the whole context (no scheduler yet)
    found["patient"] = await bench.on("patient.db", lambda m: cold(bench, m, range(1)), memory_wait_seconds=600)
    return found


async def backlog(bench: Bench) -> Pass:
    """The scheduler's first pass after an import: every finished day, newest first, with nothing else running."""
    bench.copy("fresh.db", "imported.db")

    async def catch_up(memory: MemoryManager) -> Pass:
        assert memory.scheduler is not None
        before = bench.calls()
        done = await memory.scheduler.catch_up()
        bench.backlog_calls = bench.calls() - before
        return done

    return await bench.on("imported.db", catch_up)


async def normal_day(bench: Bench) -> dict[str, Any]:
    """The scheduler has run every night; at midnight it summarises the day that ended; members ask at 18:00."""
    found: dict[str, Any] = {}
    yesterday = NOW - timedelta(days=1)
    bench.copy("fresh.db", "steady.db")
    latency, bench.stub.latency = bench.stub.latency, 0.0

    async def nights_before(memory: MemoryManager) -> None:  # members who talked had contexts: rollups exist
        assert memory.scheduler is not None and memory.rollups is not None
        await memory.scheduler.catch_up()
        for u in range(MEASURED + WARMED):
            await memory.rollups.earlier(GUILD, member(u), yesterday.date(), wait=True)

    await bench.on("steady.db", nights_before, at=yesterday)
    bench.copy("steady.db", "eve.db")
    bench.stub.latency = latency

    async def at_midnight(memory: MemoryManager) -> None:
        assert memory.scheduler is not None
        before = bench.calls()
        done = await memory.scheduler.catch_up([GUILD])
        found["midnight"] = (bench.calls() - before, done.seconds)

    jitter = Settings(_env_file=None).summary_jitter_seconds  # type: ignore[call-arg]
    await bench.on("steady.db", at_midnight, at=day_bounds(NOW.date(), "UTC")[0] + timedelta(seconds=jitter + 1))

    async def asked(memory: MemoryManager) -> None:
        found["cold"] = await cold(bench, memory, range(MEASURED))
        assert found["cold"][2] == 0, "these members' rollups were built the days before"
        warm = []
        for _ in range(bench.args.warm):
            for u in range(MEASURED):
                started = time.perf_counter()
                await memory.recollection.context(GUILD, member(u))
                warm.append(time.perf_counter() - started)
        found["warm"] = warm
        tracemalloc.start()
        snap0 = tracemalloc.take_snapshot()
        for u in range(MEASURED, MEASURED + WARMED):
            await memory.recollection.context(GUILD, member(u))
        snap1 = tracemalloc.take_snapshot()
        tracemalloc.stop()
        found["bytes"] = sum(s.size_diff for s in snap1.compare_to(snap0, "filename") if s.size_diff > 0) / WARMED
        before = bench.calls()
        await asyncio.sleep(3 * bench.stub.latency)  # anything the contexts started in the background
        found["background"] = bench.calls() - before

    await bench.on("steady.db", asked, memory_wait_seconds=600)
    # The same day without a scheduler: yesterday is not summarised when the first member asks.
    found["eve"] = await bench.on("eve.db", lambda m: cold(bench, m, range(1)), memory_wait_seconds=600)
    return found


async def measure(args: argparse.Namespace) -> None:
    stub = await GeminiStub(responder=activity_model).start()
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(args, stub, Path(tmp))

        async def setup(memory: MemoryManager) -> None:
            await fill(memory, users=args.users, days=args.days, per_day=args.per_day)
            await memory.facts.remember(GUILD, member(0), "user0 is vegetarian and plays chess", requested_by=GUILD)

        await bench.on("fresh.db", setup)  # an import, or a first start: nothing summarised yet
        stub.latency = args.latency
        first = await day_one(bench)
        imported = await backlog(bench)
        normal = await normal_day(bench)
    sizes = await growth(args, stub)
    daily_mode = await growth(argparse.Namespace(**{**vars(args), "sizes": args.sizes[:1]}), stub, mode="daily")
    await stub.stop()
    print_table(
        f"Context (SQLite, Gemini stub at {args.latency * 1000:.0f} ms a call)",
        ["measure", "model", "time", "note"],
        [
            *rows(args, first, imported, normal, backlog_calls=bench.backlog_calls, warmed=WARMED),
            [
                "context tokens of the steady member: HISTORY_MODE=summary vs daily",
                f"{sizes[0][1]} vs {daily_mode[0][1]}",
                "-",
                "days 2-7 as one summary, or the six daily summaries merged directly",
            ],
        ],
    )
    print_table(
        "Context size as stored history grows (CONTEXT_TOKEN_BUDGET 2,000)",
        ["stored messages", "steady member (tokens)", "member at the guild's pace (tokens)", "busy member's messages"],
        [[f"{n:,}", str(steady), str(busy), f"{mine:,}"] for n, steady, busy, mine in sizes],
    )


async def growth(args: argparse.Namespace, stub: GeminiStub, mode: str = "summary") -> list[tuple[int, int, int, int]]:
    """Context tokens for two members as the guild's history grows from `sizes[0]` to `sizes[-1]` messages.

    Messages spread evenly over the year before NOW. The steady member's own activity is the same in every run
    (10 messages a day in the last week, one every fourth day before); the busy member writes 2 % of the
    guild's messages, so their summaries grow with the guild until the budget holds them. Past days are
    summarised by the scheduler and the members' rollups built, as in the steady state.
    """
    out = []
    stub.latency = 0.0
    steady, busy = member(0), member(1)
    for total in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            async with sqlite_engine(Path(tmp)) as engine:
                llm = client_for(stub)
                settings = Settings(_env_file=None, memory_wait_seconds=600, history_mode=mode)  # type: ignore[call-arg]
                memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOW))
                await memory.start(background=False)
                mine = 0
                for d in range(7):
                    for i in range(10):
                        at = NOW.replace(hour=1) - timedelta(days=d, minutes=-7 * i)
                        await memory.intake.message(_message(d, 9_000_000 + i, 0, at), wait=True)
                for back in range(8, 8 + 365, 4):
                    at = NOW - timedelta(days=back, hours=3)
                    await memory.intake.message(_message(back, 9_500_000, 0, at), wait=True)
                for i in range(total):
                    back = (i * 365) // max(total, 1)
                    at = NOW.replace(hour=0) - timedelta(days=back) + timedelta(seconds=(i * 7919) % 64800)
                    author = 1 if i % 50 == 0 else 2 + i % 198
                    mine += author == 1
                    await memory.intake.message(_message(back, i, author, at), wait=True)
                await memory.flush()
                for who in (steady, busy):
                    await memory.facts.remember(
                        GUILD, who, f"member {who % 1000} is vegetarian and plays chess", requested_by=GUILD
                    )
                assert memory.scheduler is not None and memory.rollups is not None
                await memory.scheduler.catch_up()
                tokens = []
                for who in (steady, busy):
                    await memory.rollups.earlier(GUILD, who, NOW.date(), wait=True)
                    tokens.append(estimate_tokens(await memory.recollection.context(GUILD, who) or ""))
                out.append((total + 70 + len(range(8, 8 + 365, 4)), tokens[0], tokens[1], mine))
                await memory.close()
                await llm.close()
    return out


def _message(day: int, i: int, user: int, at: datetime) -> IncomingMessage:
    return IncomingMessage(
        GUILD,
        GUILD + 1,
        GUILD + 10_000_000 + day * 10_000_000 + i,
        member(user),
        f"user{user}",
        f"message {i}: the {WORDS[(i + user) % len(WORDS)]} again, and how it went on day {day}",
        at,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--warm", type=int, default=400, help="warm rounds over 5 members")
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10_000, 100_000, 1_000_000]
    )
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
