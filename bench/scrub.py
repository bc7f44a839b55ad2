"""What "deleted means gone from the file" costs on SQLite.

A guild of `--messages` messages (bench.recall's generator, indexed by the real triggers) is copied twice. In
one copy deletions run as shipped: `PRAGMA secure_delete`, FTS5 `secure-delete`, then the scrub (full-text
index compaction where needed, WAL checkpoint). In the other the same deletions run with all three off, which is
what SQLite does by default: the rows go, their bytes stay in the file. Each copy forgets the same members one
after another (`MemoryManager.forget_member`, the path `/memory forget-me` takes); reported: the time per
deletion, the time of the scrub, and whether a word only those members used is still in the file.

    python -m bench.scrub --messages 200000
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import event, text

from bench.common import print_table, sqlite_engine
from bench.recall import GUILD, build
from bot.memory.manager import MemoryManager
from bot.settings import Settings
from db import maintenance


def _insecure(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA secure_delete=OFF")
    cursor.close()


async def _members(path: Path, count: int) -> list[tuple[int, int]]:
    async with sqlite_engine(path.parent, reuse=path) as engine, engine.connect() as connection:
        rows = await connection.execute(
            text("SELECT user_id, count(*) FROM chat_history GROUP BY user_id ORDER BY count(*) DESC")
        )
        everyone = [(int(user), int(n)) for user, n in rows]
    # Members of middling activity: a few hundred to a few thousand messages each, as most members are.
    middling = [m for m in everyone if m[1] < everyone[0][1] // 4]
    return middling[:count]


async def _forget(path: Path, members: list[int], *, secure: bool, marker: str) -> tuple[list[float], float, bool]:
    settings = Settings(
        _env_file=None, database_url=f"sqlite+aiosqlite:///{path}", gemini_api_key=None, discord_token=None
    )  # type: ignore[call-arg]
    async with sqlite_engine(path.parent, reuse=path) as engine:
        if not secure:
            event.listen(engine.sync_engine, "connect", _insecure)
            async with engine.begin() as connection:
                await connection.execute(text("INSERT INTO chat_fts(chat_fts, rank) VALUES ('secure-delete', 0)"))
        async with engine.begin() as connection:  # a word only the forgotten members used
            for member in members:
                await connection.execute(
                    text("UPDATE chat_history SET message_text = message_text || ' ' || :marker WHERE user_id = :u"),
                    {"marker": marker, "u": member},
                )
        await maintenance.scrub(engine)
        real_scrub = maintenance.scrub

        async def skipped(_engine: object) -> bool:
            return True

        maintenance.scrub = skipped  # type: ignore[assignment]  # timed apart below
        memory = MemoryManager(engine, settings)
        await memory.start()
        times = []
        try:
            for user in members:
                began = time.perf_counter()
                await memory.admin.forget_member(GUILD, user)
                times.append(time.perf_counter() - began)
        finally:
            maintenance.scrub = real_scrub  # type: ignore[assignment]
            # A stop rewrites the file when a rewrite is pending: timed apart below, and only where shipped.
            await memory.changes._compaction.cancel()
            await memory.close()
        began = time.perf_counter()
        if secure:
            await maintenance.scrub(engine)
        else:
            async with engine.connect() as connection:
                await connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        scrub_seconds = time.perf_counter() - began
        scrubbed_leftover = _in_files(path, marker)
        began = time.perf_counter()
        if secure:
            await maintenance.compact(engine)
        rewrite_seconds = time.perf_counter() - began
    return times, scrub_seconds, scrubbed_leftover, rewrite_seconds, _in_files(path, marker)


def _in_files(path: Path, marker: str) -> bool:
    return any(marker.encode() in p.read_bytes() for p in path.parent.glob(path.name + "*"))


async def measure(messages: int, members: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "guild.db"
        async with sqlite_engine(base.parent, reuse=base):
            pass  # migrated
        build(base, messages, days=120, seed=7)
        chosen = await _members(base, members)
        rows = []
        for secure in (False, True):
            copy = Path(tmp) / ("secure" if secure else "plain") / "guild.db"
            copy.parent.mkdir()
            shutil.copy(base, copy)
            times, scrub_s, scrubbed, rewrite_s, leftover = await _forget(
                copy, [m for m, _ in chosen], secure=secure, marker="zqxjvmarkerword"
            )
            rows.append(
                [
                    "as shipped (secure)" if secure else "SQLite default (bytes stay)",
                    f"{statistics.median(times) * 1000:.0f}",
                    f"{max(times) * 1000:.0f}",
                    f"{scrub_s * 1000:.0f}",
                    "yes" if scrubbed else "no",
                    f"{rewrite_s * 1000:.0f}" if secure else "—",
                    "yes" if leftover else "no",
                ]
            )
        print(f"database file: {copy.stat().st_size / 2**20:.0f} MiB")
        deleted = sum(n for _, n in chosen)
        print(f"{messages:,} messages; {len(chosen)} members forgotten one after another, {deleted:,} messages")
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--members", type=int, default=5)
    args = parser.parse_args()
    rows = asyncio.run(measure(args.messages, args.members))
    print_table(
        "Forget-me on SQLite: what physical deletion costs",
        [
            "deletions",
            "per member p50 ms",
            "max ms",
            "scrub ms",
            "word in the file after scrub",
            "rewrite ms",
            "word in the file at the end",
        ],
        rows,
    )
    plain, secure = rows
    print(
        f"cost of secure deletion: {float(secure[1]) / max(float(plain[1]), 1):.2f}× per member, "
        f"+{float(secure[3]):.0f} ms once for the scrub, +{float(secure[5]):.0f} ms for the rewrite "
        f"(once for a burst of deletions, SQLITE_COMPACT_SECONDS later)"
    )


if __name__ == "__main__":
    main()
