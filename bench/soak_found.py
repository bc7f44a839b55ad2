"""Where bench.soak's planted questions are lost, in minutes instead of half an hour: the soak's guild imported fresh up
to a checkpoint (members' speech only, no bot), then each of that checkpoint's planted questions searched and packed
as a reply's recall is (`Recollection.search`, `recollect`, no deadline). Prints, per checkpoint and band, the
share of questions whose evidence all reached the packed memory and how many evidence messages were never among
recall's ranked candidates (what a better ranking cannot bring back).

The soak itself (bench/soak.py) measures the living guild, the bot answering; this measures one step of it — what
recall finds at a given size — and each recall change can be tried against it before the soak.

    python -m bench.soak_found                    # months 1 and 12, SQLite
    python -m bench.soak_found --months 1,3,6,12 --postgres postgresql+asyncpg://postgres@127.0.0.1:5432/postgres
    python -m bench.soak_found --seed 8           # another draw of the guild and its tellers
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import fields
from datetime import datetime
from pathlib import Path

from bench.common import postgres_engine, print_table, sqlite_engine
from bench.conversation_guild import Message
from bench.conversations import Conversation, write_exports
from bench.embedding_cache import CachedEmbedder
from bench.soak import BOT_ID, embedder_for
from bench.soak_guild import TELLINGS, Asked, checkpoint_at, lived, soak_guild
from bot.importer import import_file
from bot.llm.client import LLM
from bot.llm.offline import OfflineProvider
from bot.llm.prompts import load_prompts
from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.reply.routing import address
from bot.settings import Settings


class _Upto(Conversation):
    """The guild's members' speech before a moment (what members wrote to the bot left out)."""

    until = checkpoint_at(1)
    to_bot: frozenset[int] = frozenset()

    def iter_messages(self) -> Iterator[Message]:
        for message in super().iter_messages():
            if message.timestamp >= self.until:
                return
            if message.message_id not in self.to_bot:
                yield message


@asynccontextmanager
async def imported(
    month: int, conv: Conversation, embedder: CachedEmbedder, *, postgres: str | None, seed: int
) -> AsyncIterator[tuple[MemoryManager, datetime]]:
    """The guild's members' speech imported fresh up to the checkpoint, embedded and indexed: its memory, and the
    checkpoint's moment (what the memory's clock reads)."""
    upto = _Upto(**{f.name: getattr(conv, f.name) for f in fields(conv)})
    upto.until, upto.to_bot = checkpoint_at(month), frozenset(m.message_id for m, b in lived(conv, seed) if b)
    with tempfile.TemporaryDirectory() as folder:
        opening = postgres_engine(postgres) if postgres else sqlite_engine(Path(folder))
        async with opening as engine:
            url = engine.url.render_as_string(hide_password=False)
            settings = Settings(_env_file=None, database_url=url, gemini_api_key=None, discord_token=None)  # type: ignore[call-arg]
            llm = LLM(None, prompts=load_prompts(), offline=OfflineProvider())
            memory = MemoryManager(engine, settings, llm=llm, clock=FakeClock(upto.until), embedder=embedder)
            await memory.start(schedule=False)
            try:
                for path in write_exports(upto, Path(folder) / "export"):
                    await import_file(memory, path, include_bots=False, progress=False)
                await memory.flush()
                assert memory.embedding is not None
                await memory.embedding.idle()
                await memory.flush()
                assert await memory.recollection.vectors_ready(conv.guild_id)
                yield memory, upto.until
            finally:
                await memory.close()


async def _checkpoint(
    month: int, conv: Conversation, asked: list[Asked], embedder: CachedEmbedder, *, postgres: str | None, seed: int
) -> list[list[str]]:
    said = {m.message_id: m.text for m in conv.planted}
    found: Counter[str] = Counter()
    asked_in: Counter[str] = Counter()
    never: Counter[str] = Counter()
    async with imported(month, conv, embedder, postgres=postgres, seed=seed) as (memory, until):
        for item in (a for a in asked if a.month == month):
            text = item.question.text
            text = address(text, bot_user_id=BOT_ID, bot_name="Elefant", replied_to_bot=False) or text
            where = dict(channel_id=conv.channels[0].id, now=until)
            hits, _ = await memory.recollection.search(conv.guild_id, text, **where)  # type: ignore[arg-type]
            ranked = {h.message_id for h in hits}
            packed = (await memory.recollection.recollect(conv.guild_id, text, **where)).text  # type: ignore[arg-type]
            evidence = item.question.evidence_ids
            asked_in[item.band] += 1
            found[item.band] += all(said[e] in packed for e in evidence)
            never[item.band] += sum(e not in ranked for e in evidence)
    return [
        [str(month), band, f"{found[band] / asked_in[band]:.2f} ({found[band]} / {asked_in[band]})", str(never[band])]
        for band in ("weeks", "months")
        if asked_in[band]
    ]


async def run(
    messages: int, months: list[int], *, postgres: str | None, seed: int = 7, tellings: int = TELLINGS
) -> list[list[str]]:
    """The table's rows (month, band, found, evidence never a candidate), printed too."""
    conv, asked = soak_guild(messages, seed, tellings)
    embedder = await embedder_for(conv, messages, seed)
    rows = []
    try:
        for month in months:
            rows += await _checkpoint(month, conv, asked, embedder, postgres=postgres, seed=seed)
    finally:
        embedder.close()
    name = "PostgreSQL" if postgres else "SQLite"
    headers = ["month", "band", "found (all evidence packed)", "evidence never a candidate"]
    title = f"bench.soak_found, {name}: {messages:,} messages (seed {seed}), a fresh import up to each checkpoint"
    print_table(title, headers, rows)
    return rows


def checkpoints_asked(doc: str) -> tuple[int, list[int], str | None, int]:
    """The command line of a benchmark of fresh imports up to checkpoints: messages, months, PostgreSQL URL, seed."""
    parser = argparse.ArgumentParser(description=doc.split("\n", maxsplit=1)[0])
    parser.add_argument("--messages", type=int, default=180_000, help="the soak guild's size (bench.soak's default)")
    parser.add_argument("--months", default="1,12", help="checkpoints, comma-separated (of 1, 3, 6, 12)")
    parser.add_argument("--postgres", help="a PostgreSQL URL to create a database in (default: SQLite)")
    parser.add_argument("--seed", type=int, default=7, help="another seed: another guild, other tellers (a new draw)")
    args = parser.parse_args()
    return args.messages, [int(m) for m in args.months.split(",")], args.postgres, args.seed


def main() -> None:
    messages, months, postgres, seed = checkpoints_asked(__doc__)
    asyncio.run(run(messages, months, postgres=postgres, seed=seed))


if __name__ == "__main__":
    main()
