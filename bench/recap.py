"""Recaps on a synthetic busy day: does "what did I miss?" link the messages that matter, and what does it cost?

Each run builds one day of bench.recap_guild (a seed): the asker leaves at 09:00, four planted threads (an opener,
replies, a decision, sometimes a question left open) happen among `--filler` messages of banter and small talk in
four channels, and at 18:00 the asker is back and asks "what did I miss?" through the bot's own reply path
(`responder_for`: fast route, Recollection.gather_recap, phrase_recap, the answer with its links), once offline
(the extractive recap) and once with the Gemini stub's scripted model (its refs: each thread's first and longest
message shown). Reported per mode and size of day:

- threads found: the share of planted threads of which the recap links a key message (the opener or the decision);
- both keys: the share of which it links both;
- tokens per recap: the `recap` prompt as sent (instructions and packed threads), against reading the span raw
  (the same instructions with every message of the span as a line), and their ratio;
- gather ms: reading, threading and packing the span (no model), the median of the runs.

    python -m bench.recap [--runs 10] [--filler 150 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import print_table, sqlite_engine
from bench.recap_guild import AFTER, ASKER, BACK, CHANNELS, GUILD, Day, day
from bot.app import responder_for
from bot.llm.client import LLM
from bot.llm.tokens import estimate_tokens
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.recap.face import RecapAsk
from bot.memory.types import IncomingMessage
from bot.reply.routing import Request, Route
from bot.settings import Settings
from fakes.gemini_stub import GeminiStub
from fakes.model_doubles import scripted_model
from fakes.models import model_stack

ASKED = "what did I miss?"
LINK = re.compile(r"<https://discord\.com/channels/\d+/\d+/(\d+)>")


@dataclass
class Tally:
    found: list[float] = field(default_factory=list)
    both: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    raw: list[int] = field(default_factory=list)
    gather_ms: list[float] = field(default_factory=list)


async def one_day(made: Day, llm: LLM, directory: Path, tally: Tally) -> None:
    """Store the day, ask what the asker missed, and score the answer."""
    async with sqlite_engine(directory) as engine:
        url = engine.url.render_as_string(hide_password=False)
        settings = Settings(
            _env_file=None, database_url=url, gemini_api_key=None, discord_token=None, data_dir=directory
        )  # type: ignore[call-arg]
        memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(BACK))
        await memory.start(background=False)
        try:
            for s in made.said:
                await memory.intake.message(
                    IncomingMessage(GUILD, s.channel_id, s.message_id, s.author_id, s.author, s.text, s.at,
                                    reply_to_id=s.reply_to_id),
                    wait=True,
                )  # fmt: skip
            await memory.flush()
            started = time.perf_counter()
            gathered = await memory.recollection.gather_recap(RecapAsk(GUILD, ASKER, ASKED, CHANNELS["general"]))
            tally.gather_ms.append((time.perf_counter() - started) * 1000)
            prompt = llm.prompts["recap"].render(gathered.variables(settings.bot_name))
            tally.tokens.append(estimate_tokens(prompt.system + prompt.user))
            tally.raw.append(estimate_tokens(prompt.system) + gathered.raw_tokens)
            answer = await responder_for(memory, llm, settings).respond(
                Request(GUILD, ASKER, ASKED, channel_id=CHANNELS["general"], message_id=made.said[-1].message_id + 1)
            )
            assert answer.route is Route.RECAP, answer
            linked = {int(m) for m in LINK.findall(answer.text)}
            keys = [set(p.keys) for p in made.planted]
            tally.found.append(sum(bool(k & linked) for k in keys) / len(keys))
            tally.both.append(sum(k <= linked for k in keys) / len(keys))
        finally:
            await memory.close()


async def measure(args: argparse.Namespace) -> dict[tuple[str, int], Tally]:
    stub = await GeminiStub(responder=scripted_model).start()
    results: dict[tuple[str, int], Tally] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for filler in args.filler:
                for mode in ("offline", "stub"):
                    tally = results.setdefault((mode, filler), Tally())
                    for seed in range(args.runs):
                        llm = model_stack() if mode == "offline" else model_stack(stub.base_url)
                        try:
                            await one_day(day(seed, filler), llm, Path(tmp), tally)
                        finally:
                            await llm.close()
    finally:
        await stub.stop()
    return results


def report(results: dict[tuple[str, int], Tally], runs: int) -> None:
    rows = []
    for (mode, filler), t in results.items():
        span = round(statistics.mean(len(day(s, filler).span) for s in range(runs)))
        rows.append(
            [
                mode,
                f"{span}",
                f"{statistics.mean(t.found):.2f}",
                f"{statistics.mean(t.both):.2f}",
                f"{statistics.median(t.tokens):,.0f}",
                f"{statistics.median(t.raw):,.0f}",
                f"{statistics.median(t.raw) / statistics.median(t.tokens):.1f}x",
                f"{statistics.median(t.gather_ms):.0f}",
            ]
        )
    headers = ["model", "messages in span", "threads found", "both keys", "recap tokens", "raw span tokens",
               "raw / recap", "gather ms"]  # fmt: skip
    print_table(f"Recap of a day away, {runs} seeds, {AFTER} planted threads each", headers, rows)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="days (seeds) per mode and size")
    parser.add_argument("--filler", type=int, nargs="+", default=[150, 1000], help="filler messages in a day")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    report(asyncio.run(measure(args)), args.runs)


if __name__ == "__main__":
    main()
