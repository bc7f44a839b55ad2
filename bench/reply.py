"""Reply latency on the path a member gets: gateway message → Listener → Responder → send, bot-side, per route.

The bot is wired as `python -m bot run` wires it (open_app with its background work: the ingest writer, the
embedding worker, the summary scheduler), the model is the Gemini stub answering at 0 ms from a process of its
own (the real google-genai client calls it over HTTP: the client's cost is the bot's, the server's is not), and
dpytest is the gateway. The guild holds bench.recall's generated messages (a year of 40 members, every message
with a vector, its finished days summarised by the scheduler first), and while questions are asked other
members keep writing through the same listener (INGEST msg/s), so the ingest writer and the embedding worker
run throughout. Bot-side time runs from the gateway event to the reply reaching Discord's HTTP API.

Routes: chat ("just got back from the …, what a day": the model routes, context + relevant recall, the model
answers), "what do you know about me?" (fast route), and questions about the past (the model routes, recall packs
the evidence, the model answers). Each answer is checked, its route and what it was made of (chat and "what do
you know" from the asker's merged context, a question's answer phrased by the model with its sources): a timing
of another path is an error. Before the runs, one question of each route,
and the work the asker's first context ever started behind it (their weeks and months rolled up, once in a
member's life; bench.context counts it) lands. Reported per route: p50 and p99 of each run, median of the runs
with min–max.

    python -m bench.reply [--messages 100000] [--runs 3] [--questions 60] [--ingest 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import discord
import discord.ext.test as dpytest
from discord.ext.test import backend

from bench.common import StallMeter, print_table, sqlite_engine
from bench.recall import CHANNELS, GUILD, MEMBERS, NAMES, Plant, build, pct, vocabulary
from bench.recall_scale import add_vectors
from bot.app import App, open_app
from bot.discord_bot import ElefantBot
from bot.lifecycle import landed
from bot.memory.summaries import context, rollups
from bot.reply.deadline import SLOW, Answer
from bot.reply.routing import Request, Route, asks
from bot.settings import Settings
from db import statistics as planner_statistics
from fakes.gemini_stub import GeminiStub, Reply, StubRequest, as_json
from fakes.model_doubles import element, scripted_model

ROUTES = ("chat", "what do you know", "recall question")


def bench_model(request: StubRequest) -> Reply:
    """The scripted model, routing questions about the past to recall as a real model would."""
    prompt = request.prompt_text
    if "request router" in prompt:
        return as_json({"route": "recall" if asks(element(prompt, "message")) else "chat"})
    return scripted_model(request)


def _serve(pipe: Connection, latency: float) -> None:
    """The stub's process: every answer after `latency` seconds, until the benchmark closes the pipe."""

    async def serve() -> None:
        stub = await GeminiStub(responder=bench_model, latency=latency).start()
        pipe.send(stub.base_url)
        await asyncio.get_running_loop().run_in_executor(None, pipe.recv_bytes)  # EOF: the benchmark is done
        await stub.stop()

    with contextlib.suppress(EOFError):
        asyncio.run(serve())


@contextmanager
def stub_process(latency: float = 0.0) -> Iterator[str]:
    """The Gemini stub (answering after `latency` seconds) in a process of its own (its base URL), so serving a
    reply costs the bot nothing: a real model runs elsewhere too (bench.reply, bench.load)."""
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(theirs, latency), daemon=True)
    process.start()
    try:
        yield ours.recv()
    finally:
        ours.close()
        process.join(timeout=5)
        process.kill()


class Replies:
    """When each question reached the gateway and when its reply reached Discord's HTTP API."""

    def __init__(self, bot: ElefantBot) -> None:
        self.waiting: dict[int, asyncio.Future[float]] = {}
        original = bot.http.send_message

        async def send_message(channel_id: int, *, params: Any) -> Any:
            sent = time.perf_counter()
            reference = (params.payload or {}).get("message_reference") or {}
            future = self.waiting.pop(int(reference.get("message_id", 0)), None)
            if future is not None and not future.done():
                future.set_result(sent)
            return await original(channel_id, params=params)

        bot.http.send_message = send_message  # type: ignore[method-assign]
        self.answers: dict[int, Answer] = {}
        respond_within = bot.responder.respond_within

        async def recorded(request: Request, **kw: Any) -> Answer:
            answer = await respond_within(request, **kw)
            self.answers[request.message_id or 0] = answer
            return answer

        bot.responder.respond_within = recorded  # type: ignore[method-assign]

    async def ask(self, content: str, member: discord.Member, channel: discord.TextChannel) -> tuple[float, Answer]:
        """Milliseconds from the gateway event to the reply being sent, and the answer sent."""
        began = time.perf_counter()
        message = backend.make_message(content, member, channel)
        future = self.waiting.setdefault(message.id, asyncio.get_running_loop().create_future())
        sent = await asyncio.wait_for(future, timeout=30)
        return (sent - began) * 1000, self.answers.pop(message.id)


async def chatter(members: list[discord.Member], channel: discord.TextChannel, rate: float, vocab: list[str]) -> int:
    """Other members writing `rate` messages a second through the gateway until cancelled; how many."""
    rng, written = random.Random(3), 0
    try:
        while True:
            backend.make_message(" ".join(rng.choices(vocab, k=rng.randint(4, 14))), rng.choice(members), channel)
            written += 1
            await asyncio.sleep(1 / rate)
    except asyncio.CancelledError:
        return written


def gateway(bot: ElefantBot, members: int) -> tuple[discord.Guild, list[discord.TextChannel], list[discord.Member]]:
    """dpytest's gateway holding bench.recall's guild: its guild, channel and member ids."""
    dpytest.configure(bot, guilds=0, text_channels=0, voice_channels=0, members=0)
    guild = backend.make_guild("Bench Guild", id_num=GUILD)
    channels = [backend.make_text_channel(f"channel-{i}", guild, id_num=c) for i, c in enumerate(CHANNELS)]
    people = [
        backend.make_member(backend.make_user(name, f"{i + 1:04}", id_num=MEMBERS[i]), guild)
        for i, name in enumerate(NAMES[:members])
    ]
    backend.make_member(backend.get_state().user, guild)
    return guild, channels, people


async def settled(app: App, guild_id: int, member_id: int) -> None:
    """Until the work the member's first context ever started behind it has landed (their weeks and months rolled
    up, once in a member's life: bench.context counts it), and their context is merged with it: the runs measure
    a member who has talked to the bot before."""
    async with asyncio.timeout(120):
        await landed(rollups.BUILDING, context.BUILDING)
    await app.memory.recollection.context(guild_id, member_id, patient=True)


async def measure(args: argparse.Namespace, directory: Path) -> None:
    """Time each route's replies in `args.runs` runs while other members write, and print the table."""
    path = directory / "reply.db"
    began = time.perf_counter()
    async with sqlite_engine(directory, reuse=path) as engine:  # the guild first: the bot starts on its history
        plants = await asyncio.to_thread(build, path, args.messages, 365, args.seed, now=datetime.now(UTC))
        await asyncio.to_thread(add_vectors, path, args.seed)
        await planner_statistics.refresh(engine)
    with stub_process() as base_url:
        settings = _settings(path, base_url)
        async with open_app(settings, background=True) as app:
            bot = ElefantBot(memory=app.memory, responder=app.responder, settings=settings, sync_commands=False)
            guild, channels, members = gateway(bot, len(NAMES))
            await bot._async_setup_hook()
            await bot.setup_hook()
            asker, channel = members[0], channels[0]
            fact = f"{asker.display_name} likes green tea"
            summarised = await _ready(app, guild.id, members, fact)
            print(
                f"{args.messages:,} messages, vectors, {summarised} days summarised and the vector index "
                f"ready in {time.perf_counter() - began:.0f} s"
            )
            vocab, _ = vocabulary(random.Random(args.seed))
            rng = random.Random(args.seed + 1)
            questions = _questions(f"<@{bot.user.id}>", plants, members, vocab, rng)
            timed = _timer(Replies(bot), questions, fact, asker, channel)
            for route in ROUTES:  # one of each first: the first reply pays for loading the question model
                await timed(route)
            await settled(app, guild.id, asker.id)
            runs = [
                await _run(args, run, timed, rng=rng, writers=members[1:], channel=channels[1], vocab=vocab)
                for run in range(args.runs)
            ]
            await app.memory.flush()
    _report(args, runs)


def _settings(path: Path, base_url: str) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{path}",
        gemini_api_key="bench-key",
        gemini_base_url=base_url,
        discord_token=None,
        discord_members_intent=True,  # dpytest keeps members only with it
        # A paid tier's quota: the free tier's 10 / 30 requests a minute would time the limiter, not the bot.
        llm_batch_requests_per_minute=1_000_000,
        llm_fast_requests_per_minute=1_000_000,
        llm_batch_tokens_per_minute=0,
        llm_fast_tokens_per_minute=0,
    )


async def _ready(app: App, guild_id: int, members: list[discord.Member], fact: str) -> int:
    """Members named, the asker's fact remembered, the past summarised and the vectors indexed; days summarised."""
    for member in members:
        await app.memory.intake.member(guild_id, member.id, member.display_name, member.name)
    await app.memory.facts.remember(guild_id, members[0].id, fact, requested_by=members[0].id)
    assert app.memory.scheduler is not None
    summarised = await app.memory.scheduler.catch_up([guild_id])
    assert await app.memory.recollection.vectors_ready(guild_id)
    return summarised.built


def _questions(
    mention: str, plants: list[Plant], members: list[discord.Member], vocab: list[str], rng: random.Random
) -> dict[str, Callable[[], str]]:
    """A fresh question of each route, each time it is called."""
    return {
        # Not a question: the scripted router sends questions to recall, as a real model would send
        # this one to chat.
        "chat": lambda: f"{mention} just got back from the {rng.choice(vocab[15:800])}, what a day",
        "what do you know": lambda: f"{mention} what do you know about me?",
        "recall question": lambda: (
            f"{mention} {p.question}"
            if (p := rng.choice(plants)) and rng.random() < 0.5
            else f"{mention} what did {rng.choice(members).display_name} say about "
            f"{' '.join(rng.sample(vocab[15:800], 2))}?"
        ),
    }


def _timer(
    replies: Replies,
    questions: dict[str, Callable[[], str]],
    fact: str,
    asker: discord.Member,
    channel: discord.TextChannel,
) -> Callable[[str], Awaitable[float]]:
    """Ask a question of a route; the milliseconds its reply took, once the answer is checked."""
    # The route each answer took and what it was made of: chat with the asker's facts (their merged context only
    # comes to a message about them), "what do you know" from the merged context (the stub's merge writes MERGED: a
    # stand-in quotes facts alone), a question's answer
    # phrased by the model from what recall found, with its sources. A timing of any other path (a
    # fallback, a stand-in, nothing found) would flatter the bot.
    expected = {"chat": Route.CHAT, "what do you know": Route.ABOUT, "recall question": Route.RECALL}
    made_of = {
        "chat": lambda text: fact in text,
        "what do you know": lambda text: f"MERGED facts=[{fact}" in text,
        "recall question": lambda text: "\n\nSources:\n" in text,
    }

    async def timed(route: str) -> float:
        ms, answer = await replies.ask(questions[route](), asker, channel)
        if answer.route is not expected[route] or SLOW in answer.text or not made_of[route](answer.text):
            raise RuntimeError(f"a {route} took another path: {answer.route}, {answer.text[:200]!r}")
        return ms

    return timed


async def _run(
    args: argparse.Namespace,
    run: int,
    timed: Callable[[str], Awaitable[float]],
    *,
    rng: random.Random,
    writers: list[discord.Member],
    channel: discord.TextChannel,
    vocab: list[str],
) -> dict[str, list[float]]:
    """One run: `args.questions` of each route while `writers` chatter in `channel`; the timings by route."""
    timings: dict[str, list[float]] = {route: [] for route in ROUTES}
    writer = asyncio.create_task(chatter(writers, channel, args.ingest, vocab))
    with StallMeter() as stall:
        for _ in range(args.questions):
            for route in ROUTES:
                timings[route].append(await timed(route))
                await asyncio.sleep(rng.uniform(0.01, 0.05))
    writer.cancel()
    written = await writer
    await dpytest.empty_queue()
    print(
        f"run {run + 1}: {written} messages written meanwhile, worst event-loop stall "
        f"{stall.worst * 1000:.0f} ms; "
        + ", ".join(f"{r} p50 {pct(t, 50):.1f} p99 {pct(t, 99):.1f} ms" for r, t in timings.items())
    )
    return timings


def _report(args: argparse.Namespace, runs: list[dict[str, list[float]]]) -> None:
    rows = []
    for route in ROUTES:
        p50s = [pct(run[route], 50) for run in runs]
        p99s = [pct(run[route], 99) for run in runs]
        rows.append(
            [
                route,
                f"{statistics.median(p50s):.1f} ({min(p50s):.1f}–{max(p50s):.1f})",
                f"{statistics.median(p99s):.1f} ({min(p99s):.1f}–{max(p99s):.1f})",
            ]
        )
    print_table(
        f"Bot-side reply latency, {args.messages:,}-message guild (SQLite), model at 0 ms, "
        f"{args.ingest} msg/s written meanwhile; median of {args.runs} runs × {args.questions} questions (min–max)",
        ["route", "p50 ms", "p99 ms"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--questions", type=int, default=60, help="per route and run")
    parser.add_argument("--ingest", type=float, default=50.0, help="messages a second written by others meanwhile")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="elefant-reply-") as tmp:
        asyncio.run(measure(args, Path(tmp)))


if __name__ == "__main__":
    main()
