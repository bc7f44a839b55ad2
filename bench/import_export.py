"""Import benchmark: peak memory and throughput of `import` as the export grows, streamed vs the whole file.

Each size is a DiscordChatExporter export written as the tool writes it (fakes/exporter_json.py), message by
message, to a file; each import runs in a fresh process on a fresh SQLite database, set up as the `import`
command sets it up (open_app: migrations, the LLM client, the embedder, MemoryManager). Peak RSS is that
process's own high-water mark (wait4's rusage); throughput is the file's messages over the import's time,
start-up excluded. "whole" is the importer before streaming, kept here as the baseline: the file parsed with
json.loads, validated as one model, then fed message by message (and noted for embedding).

Run: python -m bench.import_export [--sizes 25000,50000,100000,200000,1000000] [--whole-max 200000]
     [--repeat 3] [--exports DIR]  (keeps the built exports there between runs; building 1 M messages takes minutes)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from zoneinfo import ZoneInfo

from bench.common import print_table
from fakes import exporter_json as dce
from fakes.exporter_json import File, Guild, JsonWriter, Msg, Reference, Snapshot, Sticker, User

GUILD = Guild(2**60 + 3000, "Bench Guild")
CHANNEL = dce.Channel(2**60 + 3002, dce.TEXT, "general", parent=dce.Channel(2**60 + 3001, dce.CATEGORY, "Text"))
WORDS = (
    "the a we you I it this that run trip exam bike train lunch coffee game match tonight tomorrow weekend "
    "really maybe probably never always think know want need going see meet plan book ticket station city "
    "party birthday movie music band concert rain sun cold hot work office meeting deadline project code bug "
    "release server channel thread photo picture link video funny true false ok yes no thanks sorry great"
).split()


def messages(count: int, *, seed: int = 7) -> Iterator[Msg]:
    """A busy channel: 300 members (a few bots), replies, mentions, edits, files, stickers, forwards, joins."""
    rng = random.Random(seed)
    members = [
        User(2**60 + 10_000 + i, f"member{i}", f"Member {i}" if i % 3 else None, is_bot=i % 97 == 0) for i in range(300)
    ]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    step = timedelta(days=365) / max(count, 1)
    first_id = 2**60 + 1_000_000
    for i in range(count):
        at = start + step * i
        author = members[int(rng.paretovariate(1.2)) % len(members)]  # a few members talk most
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
        roll = rng.random()
        fields: dict[str, object] = {}
        if roll < 0.01:
            yield Msg(first_id + i, author, at, "", type=dce.JOIN)
            continue
        if roll < 0.21 and i:
            fields["type"] = dce.REPLY
            fields["reference"] = Reference(first_id + rng.randrange(i), CHANNEL.id, GUILD.id)
        if rng.random() < 0.1:
            fields["mentions"] = [rng.choice(members)]
        if rng.random() < 0.05:
            fields["edited"] = at + timedelta(minutes=2)
        if rng.random() < 0.03:
            fields["files"] = [File(2**60 + 50_000_000 + i, f"photo_{i}.jpg")]
        if rng.random() < 0.01:
            fields["stickers"] = [Sticker(2**60 + 60_000_000 + i % 50, "Wave")]
        if rng.random() < 0.005:
            fields["reference"] = Reference(2**60 + 70_000_000 + i, 2**60 + 42, 2**60 + 43, forward=True)
            fields["forwarded"] = Snapshot(at - timedelta(days=1), text)
            text = ""
        yield Msg(first_id + i, author, at, text, **fields)  # type: ignore[arg-type]


def build(path: Path, count: int) -> Path:
    """The export of `count` messages at `path`, written streaming (kept if it is there already)."""
    if not path.exists():
        part = path.with_suffix(".partial")
        JsonWriter(GUILD, CHANNEL, zone=ZoneInfo("Europe/Berlin")).write_stream(part, messages(count))
        part.rename(path)
    return path


async def import_whole(memory, path: Path, *, include_bots: bool, bot_name: str) -> int:
    """The importer before streaming (bot/importer.py at 50406f0): whole file parsed, validated, then fed."""
    from bot.exports import Export
    from bot.memory.types import IncomingMessage
    from bot.reply.routing import address, stored_kind

    export = Export.model_validate(json.loads(path.read_text(encoding="utf-8-sig")))  # noqa: ASYNC240 - as it was
    guild_id, channel = export.guild.id, export.channel
    await memory.intake.channel(guild_id, channel.id, is_private=None, parent_id=None, channel_type=channel.type)
    for index, m in enumerate(export.messages):
        if index % 1000 == 0:
            await asyncio.sleep(0)
        if m.author.is_bot and not include_bots:
            continue
        text = m.speech()
        if not text:
            continue
        addressed = address(m.content, bot_user_id=0, bot_name=bot_name, replied_to_bot=False)
        await memory.intake.message(
            IncomingMessage(
                guild_id=guild_id,
                channel_id=channel.id,
                message_id=m.id,
                author_id=m.author.id,
                author_name=m.author.nickname or m.author.name,
                author_username=m.author.name,
                content=text,
                created_at=m.timestamp,
                edited_at=m.timestamp_edited,
                reply_to_id=m.reference.message_id if m.reference and m.reference.type != "Forward" else None,
                mentioned_user_ids=tuple(x.id for x in m.mentions),
                kind=stored_kind(addressed),
            ),
            wait=True,
        )
    await memory.flush()
    return len(export.messages)


async def child(approach: str, path: Path, database_url: str) -> None:
    """One import in this process, as the `import` command runs it; prints its seconds and messages as JSON."""
    from bot.app import open_app
    from bot.importer import import_file
    from bot.settings import Settings

    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    async with open_app(settings) as app:
        started = time.perf_counter()
        if approach == "stream":
            result = await import_file(
                app.memory, path, include_bots=settings.ingest_other_bots, progress=False, bot_name=settings.bot_name
            )
            count = result.messages + result.skipped
        else:
            count = await import_whole(
                app.memory, path, include_bots=settings.ingest_other_bots, bot_name=settings.bot_name
            )
        seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "messages": count}))


def measure(approach: str, path: Path, directory: Path, **settings: str) -> dict[str, float]:
    """Import `path` in a fresh process on a fresh database: its peak RSS (MiB), seconds and messages/s.

    `settings`: environment variables for the importing process (INGEST_QUEUE_MAX=…).
    """
    database = directory / f"import-{approach}-{time.monotonic_ns()}.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "LOG_LEVEL": "WARNING", **settings}
    command = [
        sys.executable,
        "-m",
        "bench.import_export",
        "--child",
        approach,
        str(path),
        f"sqlite+aiosqlite:///{database}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=directory)
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{approach} import of {path.name} failed ({process.returncode})")
    for name in database.parent.glob(database.name + "*"):
        name.unlink()
    figures = json.loads(out.decode().strip().splitlines()[-1])
    return {
        "rss_mib": usage.ru_maxrss / 1024,  # Linux reports KiB
        "seconds": figures["seconds"],
        "rate": figures["messages"] / figures["seconds"],
    }


def _medians(runs: list[dict[str, float]]) -> dict[str, float] | None:
    return {key: median(run[key] for run in runs) for key in runs[0]} if runs else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="25000,50000,100000,200000,1000000")
    parser.add_argument("--whole-max", type=int, default=200_000, help="largest export the old importer is given")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size and approach; medians are printed")
    parser.add_argument("--exports", type=Path, default=None, help="keep built exports in this folder")
    parser.add_argument("--child", nargs=3, metavar=("APPROACH", "FILE", "DATABASE_URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        approach, path, url = args.child
        asyncio.run(child(approach, Path(path), url))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="elefant-import-bench-") as tmp:
        directory = Path(tmp)
        exports = args.exports or directory
        exports.mkdir(parents=True, exist_ok=True)
        rows = []
        empty = measure("stream", build(exports / "export-0.json", 0), directory)
        rows.append(["0 (start-up only)", "0", "—", f"{empty['rss_mib']:,.0f}", "—", "—", ""])
        for size in sizes:
            started = time.perf_counter()
            path = build(exports / f"export-{size}.json", size)
            print(f"export of {size:,} messages ready ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
            mib = path.stat().st_size / 2**20
            # Alternating runs, so that a noisy neighbour on a shared machine hits both alike; medians.
            wholes, streams = [], []
            for _ in range(args.repeat):
                if size <= args.whole_max:
                    wholes.append(measure("whole", path, directory))
                streams.append(measure("stream", path, directory))
            whole, stream = _medians(wholes), _medians(streams)
            rows.append(
                [
                    f"{size:,}",
                    f"{mib:,.0f}",
                    f"{whole['rss_mib']:,.0f}" if whole else "—",
                    f"{stream['rss_mib']:,.0f}",
                    f"{whole['rate']:,.0f}" if whole else "—",
                    f"{stream['rate']:,.0f}",
                    f"{stream['rate'] / whole['rate']:.2f}" if whole else "",
                ]
            )
    print_table(
        f"Import into SQLite (a process per import; peak RSS in MiB; medians of {args.repeat})",
        [
            "messages",
            "file MiB",
            "peak RSS whole",
            "peak RSS streamed",
            "msg/s whole",
            "msg/s streamed",
            "streamed/whole",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
