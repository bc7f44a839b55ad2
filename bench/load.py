"""The reply deadline under load: one or three bot processes on PostgreSQL, messages at a fixed rate, model at 300 ms.

Each process is `python -m bot run` with dpytest as its gateway (bench/load_child.py: a guild of its own, as a
shard has), the local embedding model on (documents in its niced child process), and the Gemini stub answering
every call after `--latency` seconds from a process of its own (bench.reply's scripted model: questions about the
past are routed to recall). `--rate` messages a second in all, split evenly between the processes, `--share` of
them addressed to the bot; a reply's latency counts from the moment its message was due. Reported per run: reply
latency p50 / p99 / max, the share of replies over the deadline + 1 s, how the answers were made (the model; the
deadline's answer from memory; offline), the worst event-loop stall, and the embedding backlog when the run ends
(stored messages without a vector, from SQL; texts waiting in memory; texts let go to the backlog scan).

`--history N` starts each guild with N messages of the last two weeks, stored without vectors or summaries, so
start-up work (the embedding backlog, the summaries of finished days, the vector index) runs under the load.
`--search` looks for the highest sustained rate — every reply within the deadline + 1 s and each the model's
answer, none from memory at the deadline — doubling, then halving the gap; then runs at twice that rate, where
replies must still come within the deadline + 1 s (answers may carry less).

    python -m bench.load [--processes 1|3] [--rate 40] [--seconds 40] [--history 0] [--search]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common import postgres_engine, print_table
from bench.reply import stub_process
from bot.llm.local_embedder import MODEL
from db import vectors
from db.engine import create_session_factory

ROOT = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Run:
    """One run's figures."""

    rate: float
    processes: int
    sent: int
    latencies: list[float]
    unanswered: int
    kinds: dict[str, int]
    stall: float
    unembedded: int
    waiting: int
    let_go: int
    embedded: int
    deadline: float

    @property
    def late(self) -> int:
        """Replies over the deadline + 1 s, or never sent."""
        return sum(t > self.deadline + 1 for t in self.latencies) + self.unanswered

    @property
    def in_time(self) -> bool:
        """Every reply within the deadline + 1 s (answers may carry less)."""
        return self.late == 0 and self.sent > 0

    @property
    def passed(self) -> bool:
        """Sustained: every reply within the deadline + 1 s, and every one the model's answer (none from memory
        at the deadline)."""
        return self.in_time and self.kinds.get("deadline", 0) == 0

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else float("nan")

    def row(self) -> list[str]:
        replies = len(self.latencies) + self.unanswered
        return [
            f"{self.processes}",
            f"{self.rate:g}",
            f"{replies}",
            f"{self.pct(50):.2f}",
            f"{self.pct(99):.2f}",
            f"{max(self.latencies, default=float('nan')):.2f}",
            f"{100 * self.late / max(replies, 1):.0f} %",
            " / ".join(str(self.kinds.get(k, 0)) for k in ("model", "deadline", "offline")),
            f"{self.stall * 1000:.0f}",
            f"{self.embedded:,}",
            f"{self.unembedded:,} ({self.waiting:,} / {self.let_go:,})",
        ]


HEADERS = [
    "processes",
    "msg/s",
    "replies",
    "p50 s",
    "p99 s",
    "max s",
    "over deadline + 1 s",
    "model / deadline / offline",
    "worst stall ms",
    "embedded",
    "backlog at end (waiting / let go)",
]


async def child(index: int, args: argparse.Namespace, db_url: str, base_url: str, home: Path) -> dict[str, Any]:
    """One bot process through its run; its RESULT line."""
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "DATABASE_URL"}}
    env = {
        **keep,
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": db_url,
        "DISCORD_TOKEN": "fake.token.value",
        "DISCORD_MEMBERS_INTENT": "true",
        "DATA_DIR": str(home / "data"),
        "GEMINI_API_KEY": "bench-key",
        "GEMINI_BASE_URL": base_url,
        "LOG_LEVEL": "WARNING",
        "REPLY_DEADLINE_SECONDS": str(args.deadline),
        # A paid tier's quota and concurrency: the free tier's limits would time the limiter, not the bot.
        "LLM_FAST_REQUESTS_PER_MINUTE": "1000000",
        "LLM_BATCH_REQUESTS_PER_MINUTE": "1000000",
        "LLM_FAST_TOKENS_PER_MINUTE": "0",
        "LLM_BATCH_TOKENS_PER_MINUTE": "0",
        "LLM_MAX_CONCURRENCY": "64",
        "LOAD_INDEX": str(index),
        "LOAD_ID_BASE": str(2**60 + index * 10**9),
        "LOAD_RATE": str(args.rate / args.processes),
        "LOAD_SECONDS": str(args.seconds),
        "LOAD_SHARE": str(args.share),
        "LOAD_HISTORY": str(args.history),
    }
    with (home / "stderr.log").open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.load_child", cwd=home, env=env, stdout=asyncio.subprocess.PIPE, stderr=err
        )
        assert process.stdout is not None
        result: dict[str, Any] | None = None
        async for line in process.stdout:
            if line.startswith(b"RESULT "):
                result = json.loads(line[7:])
        await process.wait()
    if result is None:
        tail = (home / "stderr.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"process {index} ended ({process.returncode}) without a result:\n{tail}")
    return result


async def unembedded(engine: AsyncEngine) -> int:
    async with create_session_factory(engine)() as session:
        return await vectors.unembedded_count(session, MODEL)


async def one_run(args: argparse.Namespace, base_url: str, work: Path) -> Run:
    """A fresh database, `args.processes` bots through `args.seconds` at `args.rate`; the figures."""
    async with postgres_engine(args.database) as engine:
        db_url = engine.url.render_as_string(hide_password=False)
        homes = [work / f"r{args.rate:g}-p{i}" for i in range(args.processes)]
        results = await asyncio.gather(*(child(i, args, db_url, base_url, h) for i, h in enumerate(homes)))
        left = await unembedded(engine)
    kinds: dict[str, int] = {}
    for r in results:
        for k, v in r["kinds"].items():
            kinds[k] = kinds.get(k, 0) + v
    run = Run(
        rate=args.rate,
        processes=args.processes,
        sent=sum(r["sent"] for r in results),
        latencies=[t for r in results for t in r["latencies"]],
        unanswered=sum(r["unanswered"] for r in results),
        kinds=kinds,
        stall=max(r["worst_stall"] for r in results),
        unembedded=left,
        waiting=sum(r["embedding_waiting"] or 0 for r in results),
        let_go=sum(r["embedding_let_go"] or 0 for r in results),
        embedded=sum(r["embedded"] or 0 for r in results),
        deadline=args.deadline,
    )
    verdict = "sustained" if run.passed else "in time, answers carry less" if run.in_time else "LATE"
    print(" | ".join(run.row()), "|", verdict, flush=True)
    return run


async def search(args: argparse.Namespace, base_url: str, work: Path) -> list[Run]:
    """Double the rate until a run fails, then halve the gap `args.steps` times; then run at twice the best."""
    runs: list[Run] = []

    async def at(rate: float) -> Run:
        run = await one_run(argparse.Namespace(**{**vars(args), "rate": rate}), base_url, work)
        runs.append(run)
        return run

    good, bad = 0.0, None
    rate = args.rate
    while bad is None:
        if (await at(rate)).passed:
            good, rate = rate, rate * 2
        else:
            bad = rate
    for _ in range(args.steps):
        middle = round((good + bad) / 2)
        if middle in {good, bad}:
            break
        if (await at(middle)).passed:
            good = middle
        else:
            bad = middle
    if good:
        print(f"highest sustained rate: {good:g} msg/s; now twice that")
        await at(2 * good)
    return runs


async def measure(args: argparse.Namespace) -> None:
    print("  | ".join(HEADERS))
    with tempfile.TemporaryDirectory(prefix="elefant-load-") as tmp, stub_process(args.latency) as base_url:
        runs = await search(args, base_url, Path(tmp)) if args.search else [await one_run(args, base_url, Path(tmp))]
    print_table(
        f"Reply latency under load on PostgreSQL: the model at {args.latency * 1000:.0f} ms, "
        f"{args.share:.0%} of messages addressed to the bot, deadline {args.deadline:g} s, "
        f"{args.seconds:g} s per run from start-up"
        + (f", each guild starting with {args.history:,} messages without vectors" if args.history else ""),
        HEADERS,
        [run.row() for run in runs],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=1, help="bot processes (each its own guild)")
    parser.add_argument("--rate", type=float, default=40.0, help="messages a second in all (the search's start)")
    parser.add_argument("--seconds", type=float, default=40.0, help="each run's length, from start-up")
    parser.add_argument("--share", type=float, default=0.05, help="the share addressed to the bot")
    parser.add_argument("--latency", type=float, default=0.3, help="the stub model's answer time, seconds")
    parser.add_argument("--deadline", type=float, default=10.0, help="REPLY_DEADLINE_SECONDS")
    parser.add_argument(
        "--history", type=int, default=0, help="messages each guild already has (two weeks, no vectors) at start"
    )
    parser.add_argument("--search", action="store_true", help="look for the highest rate that meets the deadline")
    parser.add_argument("--steps", type=int, default=3, help="halvings of the gap in the search")
    parser.add_argument("--database", default=PG_URL, help="a PostgreSQL server (a database is made per run)")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
