"""Context benchmark: LLM calls per guild-day, cold/warm get_memories, context size as history grows, cache bytes.

The model is the Gemini stub (tests/gemini_stub.py) at a fixed latency, reached by the real google-genai client.
Run: python -m bench.context [--users 200] [--days 30] [--per-day 2000] [--latency 0.2] [--sizes 1000,...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

from google import genai
from google.genai import types

from bench.common import print_table, sqlite_engine
from bot.llm.breaker import CircuitBreaker
from bot.llm.client import LLM
from bot.llm.gemini import GeminiProvider
from bot.llm.prompts import load_prompts
from bot.llm.resilience import ResilientProvider
from bot.llm.tokens import estimate_tokens
from bot.llm.usage import UsageRecorder
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage
from bot.settings import Settings
from tests.gemini_stub import GeminiStub
from tests.model_doubles import scripted_model

GUILD = 2**60
NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
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


def client_for(stub: GeminiStub) -> tuple[LLM, genai.Client]:
    """The real client against the stub, with the production resilience settings."""
    client = genai.Client(api_key="bench", http_options=types.HttpOptions(base_url=stub.base_url))
    provider = ResilientProvider(
        GeminiProvider(client, models={"batch": "gemini-2.5-flash", "fast": "gemma-3-27b-it"}, timeout_s=30),
        attempts=2,
        timeout_s=30,
        max_concurrency=8,
        requests_per_minute=100_000,
        breaker=CircuitBreaker(failures=50, cooldown=60),
    )
    return LLM(provider, prompts=load_prompts()), client


async def fill(memory: MemoryManager, *, users: int, days: int, total: int) -> None:
    """`total` messages from `users` members spread evenly over the `days` days before NOW."""
    per_day = max(1, total // days)
    step = timedelta(seconds=max(1, 16 * 3600 // per_day))
    for d in range(days, -1, -1):
        start = NOW.replace(hour=1) - timedelta(days=d)
        for i in range(per_day if d else per_day // 2):
            u = (i * 7 + d) % users
            await memory.ingest_message(
                IncomingMessage(
                    GUILD,
                    GUILD + 1,
                    GUILD + 10_000_000 + d * 1_000_000 + i,
                    GUILD + 100 + u,
                    f"user{u}",
                    f"day {d} message {i}: talking about the {WORDS[(i + u) % len(WORDS)]} with friends",
                    start + step * i,
                ),
                wait=True,  # a bulk load: back-pressure, not the spill file
            )
    await memory.flush()


def llm_calls(stub: GeminiStub) -> int:
    return len(stub.requests)


async def measure(args: argparse.Namespace) -> None:
    stub = await GeminiStub(responder=scripted_model, latency=args.latency).start()
    settings = Settings(_env_file=None, context_token_budget=2000)  # type: ignore[call-arg]
    rows_main: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with sqlite_engine(Path(tmp)) as engine:
            llm, client = client_for(stub)
            from db.engine import create_session_factory

            llm = LLM(llm.primary, prompts=llm.prompts, usage=UsageRecorder(create_session_factory(engine)))
            memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOW))
            await memory.start()
            await fill(memory, users=args.users, days=args.days, total=args.users and args.days * args.per_day)
            assert memory.summaries is not None
            # The daily job: every past day of the last week summarised once for the whole guild.
            before = llm_calls(stub)
            for back in range(1, 7):
                await memory.summaries.past_day(GUILD, (NOW - timedelta(days=back)).date())
            per_day = (llm_calls(stub) - before) / 6
            # A member's first context starts rolling up their older weeks and months in the background
            # (older days summarised once for the guild, then one call per member and period); in the steady
            # state those are stored, like the finished days. Built here, and counted, for the members below.
            background = []
            for u in range(25):  # the five measured cold below, and the twenty whose cache bytes are measured
                before = llm_calls(stub)
                await memory.rollups.earlier(GUILD, GUILD + 100 + u, NOW.date(), wait=True)  # type: ignore[union-attr]
                background.append(llm_calls(stub) - before)
            await memory.close()

            # Cold: a fresh process (empty caches) over the same database, like a restart.
            memory = MemoryManager(
                engine, settings.model_copy(update={"memory_wait_seconds": 60}), llm=llm, clock=FakeClock(NOW)
            )
            await memory.start()
            cold_calls, cold_times = [], []
            for u in range(5):
                before, started = llm_calls(stub), time.perf_counter()
                context = await memory.get_memories(GUILD, GUILD + 100 + u)
                cold_times.append(time.perf_counter() - started)
                cold_calls.append(llm_calls(stub) - before)
                assert context
            warm = []
            for _ in range(args.warm):
                for u in range(5):
                    started = time.perf_counter()
                    await memory.get_memories(GUILD, GUILD + 100 + u)
                    warm.append(time.perf_counter() - started)
            # Cache bytes per user: warm contexts for more users and measure what the caches hold.
            tracemalloc.start()
            snap0 = tracemalloc.take_snapshot()
            for u in range(5, 25):
                await memory.get_memories(GUILD, GUILD + 100 + u)
            snap1 = tracemalloc.take_snapshot()
            tracemalloc.stop()
            grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename") if s.size_diff > 0)
            await memory.close()
            await client.aio.aclose()
    rows_main += [
        [
            "daily-summary LLM calls per guild-day",
            f"{per_day:.1f}",
            f"{args.per_day:,} messages/day, {args.users} users",
        ],
        ["LLM calls, first cold context of the day (guild)", str(cold_calls[0]), "today's batch + history + merge"],
        ["LLM calls, cold context of another member", str(max(cold_calls[1:])), "history + merge"],
        [
            "background LLM calls, a member's first rollups (first / another member)",
            f"{background[0]} / {max(background[1:5])}",
            f"older days summarised once per guild, then one call per member and period ({args.days} days)",
        ],
        ["cold get_memories p50", f"{statistics.median(cold_times) * 1000:.0f} ms", f"stub latency {args.latency}s"],
        ["warm get_memories p50", f"{_pct(warm, 50) * 1000:.3f} ms", f"{len(warm)} calls"],
        ["warm get_memories p99", f"{_pct(warm, 99) * 1000:.3f} ms", "target < 1 ms"],
        ["cache bytes per user (approx.)", f"{grown / 20:,.0f}", "tracemalloc, 20 users warmed"],
    ]
    sizes = await growth(args, stub)
    daily_mode = await growth(argparse.Namespace(**{**vars(args), "sizes": args.sizes[:1]}), stub, mode="daily")
    rows_main.append(
        [
            "context tokens: HISTORY_MODE=summary vs daily",
            f"{sizes[0][1]} vs {daily_mode[0][1]}",
            "days 2-7 as one summary, or the six daily summaries merged directly",
        ]
    )
    await stub.stop()
    print_table("Context (SQLite, Gemini stub)", ["measure", "value", "note"], rows_main)
    print_table(
        "Context size as stored history grows",
        ["stored messages", "context tokens (user 0)", "vs smallest"],
        [[f"{n:,}", str(t), f"{(t - sizes[0][1]) / sizes[0][1]:+.1%}" if sizes[0][1] else "-"] for n, t in sizes],
    )


async def growth(args: argparse.Namespace, stub: GeminiStub, mode: str = "summary") -> list[tuple[int, int]]:
    """Context tokens for one member as the stored history grows from `sizes[0]` to `sizes[-1]` messages.

    The member's own activity is the same in every run: 10 messages a day in the last week (of 100 a day)
    and one message every fourth day over the year before. What grows is everyone else's history, spread
    over that year. The context must not grow with it (rollups included, built as in the steady state).
    """
    out = []
    stub.latency = 0.0
    for total in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            async with sqlite_engine(Path(tmp)) as engine:
                llm, client = client_for(stub)
                settings = Settings(_env_file=None, memory_wait_seconds=600, history_mode=mode)  # type: ignore[call-arg]
                memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(NOW))
                await memory.start()
                recent = 7 * 100
                for d in range(7):
                    for i in range(100):
                        await memory.ingest_message(
                            _message(
                                d,
                                i,
                                0 if i % 10 == 0 else 1 + i % 50,
                                NOW.replace(hour=1) - timedelta(days=d, seconds=-60 * i),
                            ),
                            wait=True,
                        )
                own = range(8, 8 + 365, 4)
                for back in own:
                    at = NOW - timedelta(days=back, hours=3)
                    await memory.ingest_message(_message(back, 9_000_000 + back, 0, at), wait=True)
                old = max(0, total - recent - len(own))
                for i in range(old):
                    back = 8 + (i * 365) // max(old, 1)
                    at = NOW - timedelta(days=back, seconds=i % 80000)
                    await memory.ingest_message(_message(back, i, 1 + i % 199, at), wait=True)
                await memory.flush()
                await memory.remember(GUILD, GUILD + 100, "user0 is vegetarian and plays chess", requested_by=GUILD)
                await memory.rollups.earlier(GUILD, GUILD + 100, NOW.date(), wait=True)  # type: ignore[union-attr]
                context = await memory.get_memories(GUILD, GUILD + 100) or ""
                out.append((recent + len(own) + old, estimate_tokens(context)))
                await memory.close()
                await client.aio.aclose()
    return out


def _message(day: int, i: int, user: int, at: datetime) -> IncomingMessage:
    return IncomingMessage(
        GUILD,
        GUILD + 1,
        GUILD + 10_000_000 + day * 10_000_000 + i,
        GUILD + 100 + user,
        f"user{user}",
        f"message {i}: the {WORDS[(i + user) % len(WORDS)]} again",
        at,
    )


def _pct(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--warm", type=int, default=400, help="warm rounds over 5 users")
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10_000, 100_000, 1_000_000]
    )
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
