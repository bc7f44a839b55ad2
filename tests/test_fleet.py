"""Spans the run path, intake, tombstones, catch-up and the CLI: several bot processes run as operators run them.

Three `python -m bot run` processes (tests/fleet_child.py: the gateway faked, everything else real, embeddings on)
share a private PostgreSQL server that is restarted under them; one is frozen (SIGSTOP) inside a transaction while
the others go on; one is killed with SIGKILL, and started again while the database restarts under its catch-up; a
member is forgotten from the command line while the processes still deliver, embed and hold her messages, and another
is opted out and back in by an admin's process before the killed one reconnects. Afterwards every message "Discord"
has is stored exactly once, except the forgotten member's, of whom nothing is left (no id of hers in any row, others'
mentions of her included), and what the other said while opted out; PostgreSQL saw no deadlock. The same on SQLite
with one process, SIGKILL and a restart, and messages said while it was down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import asyncpg
import discord
from sqlalchemy import func, select

from bot.memory.manager import MemoryManager
from bot.settings import Settings
from db.deletion import FORMER
from db.engine import create_engine
from db.migrate import upgrade
from db.models import ChatMessage, DeadLetter, MemberName
from tests.private_postgres import PrivateServer
from tests.residue import forgotten_in_clear
from tests.test_stops import environment, start, wait_for_line

SECONDS = 2.0  # each phase's length: enough for hundreds of messages at FLEET_RATE
FROZEN_SECONDS = 20.0  # as issue 37 froze one: twice the server's idle-transaction timeout (10 s, db/engine.py)


class Fleet:
    def __init__(self, db_url: str, root: Path) -> None:
        self.db_url, self.root = db_url, root
        self.log = root / "discord.jsonl"
        self.base = discord.utils.time_snowflake(discord.utils.utcnow())
        self.processes: dict[int, asyncio.subprocess.Process] = {}
        self.ids: dict[str, int] = {}

    async def start(self, index: int, *, catch_up: bool = True) -> None:
        home = self.root / f"p{index % 10}"  # a restarted process keeps its directory (and spill files)
        home.mkdir(exist_ok=True)
        env = environment(
            self.db_url,
            DISCORD_TOKEN="fake.token.value",
            DISCORD_MEMBERS_INTENT="true",
            DATA_DIR=str(home / "data"),
            EMBEDDING_MODEL="local",  # vector batches race the forget-me (issue 37 item 4), as in production
            INGEST_FLUSH_MS="100",
            INGEST_SHUTDOWN_SECONDS="30",
            FLEET_DISCORD_LOG=str(self.log),
            FLEET_ID_BASE=str(self.base),
            FLEET_INDEX=str(index),
            FLEET_RATE="100",
        )
        child = await start(["-m", "tests.fleet_child"], home, env)
        assert child.stdout is not None
        ready = await wait_for_line(child.stdout, "READY")
        self.ids = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", ready)}
        self.processes[index] = child
        if catch_up:
            await self.caught_up(index)

    async def caught_up(self, index: int) -> None:
        stdout = self.processes[index].stdout
        assert stdout is not None
        await wait_for_line(stdout, "CAUGHT UP")  # a busy machine may take longer than a phase

    def kill(self, index: int) -> None:
        self.processes.pop(index).kill()

    async def stop_all(self) -> dict[int, str]:
        """SIGTERM to every process; what each wrote on stderr, by index (kept beside the test's files too)."""
        errors = {}
        for child in self.processes.values():
            child.send_signal(signal.SIGTERM)
        for index, child in self.processes.items():
            _, err = await asyncio.wait_for(child.communicate(), 120)
            errors[index] = err.decode()
            (self.root / f"stderr-{child.pid}.log").write_text(errors[index])
            assert child.returncode == 0, errors[index][-3000:]
        return errors

    @contextlib.asynccontextmanager
    async def frozen(self, index: int, url: str) -> AsyncIterator[bool]:
        """The process stopped (SIGSTOP) until the block ends; True when it was caught inside a transaction that
        others wait for (tried for a while: between a batch's statements is a small part of a process's time)."""
        child = self.processes[index]
        caught = False
        for _ in range(30):
            child.send_signal(signal.SIGSTOP)
            await asyncio.sleep(0.5)
            if caught := bool(await blocked_by_an_idle_transaction(url)):
                break
            child.send_signal(signal.SIGCONT)
            await asyncio.sleep(0.05 * (1 + index))
        child.send_signal(signal.SIGSTOP)  # caught or not: frozen mid-traffic
        try:
            yield caught
        finally:
            child.send_signal(signal.SIGCONT)

    def said(self) -> dict[int, int]:
        """Every message "Discord" has: id -> author."""
        found = {}
        for line in self.log.read_text().splitlines():
            data = json.loads(line)
            found[int(data["id"])] = int(data["author"]["id"])
        return found

    def said_while_down(self, n: int) -> list[int]:
        """Messages said while the bot was down: written to "Discord" only, in its own format."""
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        template = next(m for m in reversed(lines) if m["author"]["username"] == "alice")
        ids = [discord.utils.time_snowflake(discord.utils.utcnow()) | 31 << 17 | i for i in range(n)]
        with self.log.open("a") as log:
            for i, message_id in enumerate(ids):
                log.write(json.dumps({**template, "id": message_id, "content": f"while down {i}"}) + "\n")
        return ids


async def stored_rows(db_url: str) -> tuple[dict[int, int], int, int]:
    """(message id -> author) of what is stored, how many names "carol" has, and the dead letters."""
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            rows = dict((await conn.execute(select(ChatMessage.message_id, ChatMessage.user_id))).all())
            names = await conn.scalar(
                select(func.count()).select_from(MemberName).where(MemberName.display_name == "carol")
            )
            dead = await conn.scalar(select(func.count()).select_from(DeadLetter))
        return rows, int(names or 0), int(dead or 0)
    finally:
        await engine.dispose()


def spill_left(root: Path) -> list[Path]:
    return [p for p in root.glob("p*/data/ingest-spill-*.jsonl") if p.read_text().count("\n") > 1]


async def forget(fleet: Fleet, user: int) -> None:
    env = environment(fleet.db_url, DATA_DIR=str(fleet.root / "cli"))
    cli = await start(
        ["-m", "bot", "purge", "--guild", str(fleet.ids["guild"]), "--user", str(user), "--yes"], fleet.root, env
    )
    _, err = await asyncio.wait_for(cli.communicate(), 120)
    assert cli.returncode == 0, err.decode()


def _said_at(message_id: int) -> datetime:
    return discord.utils.snowflake_time(message_id)


async def opted_out_for_a_while(fleet: Fleet, user: int) -> tuple[datetime, datetime, datetime, datetime]:
    """An admin's process opts the member out and, half a phase later, back in: the times before and after each."""
    engine = create_engine(fleet.db_url)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=fleet.db_url,
        data_dir=fleet.root / "admin",
        gemini_api_key=None,
        discord_token=None,
    )
    memory = MemoryManager(engine, settings)
    await memory.start(background=False)
    try:
        marks = [discord.utils.utcnow()]
        await memory.admin.opt_out(fleet.ids["guild"], user, delete_stored=False)
        marks.append(discord.utils.utcnow())
        await asyncio.sleep(SECONDS / 2)
        marks.append(discord.utils.utcnow())
        await memory.admin.opt_in(fleet.ids["guild"], user)
        marks.append(discord.utils.utcnow())
    finally:
        await memory.close()
        await engine.dispose()
    return marks[0], marks[1], marks[2], marks[3]


async def mentions_unnamed(db_url: str) -> int:
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            query = select(func.count()).where(ChatMessage.message_text.contains(FORMER))
            return int(await conn.scalar(query) or 0)
    finally:
        await engine.dispose()


def _dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg", "postgresql")


async def blocked_by_an_idle_transaction(url: str) -> int:
    """How many sessions wait for a lock that a session idle inside its transaction holds (a frozen process's:
    no process of Elefant is idle inside a transaction for a second)."""
    conn = await asyncpg.connect(_dsn(url))
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity waiting, pg_stat_activity holding "
                "WHERE holding.pid = ANY(pg_blocking_pids(waiting.pid)) AND holding.state = 'idle in transaction' "
                "AND now() - holding.state_change > interval '0.3 s'"
            )
        )
    finally:
        await conn.close()


async def written_by(url: str, indexes: tuple[int, ...]) -> int:
    """How many messages the given processes delivered are stored (their text is "p<index> m<n>")."""
    conn = await asyncpg.connect(_dsn(url))
    try:
        patterns = [f"p{i} m%" for i in indexes]
        return int(await conn.fetchval("SELECT count(*) FROM chat_history WHERE message_text LIKE any($1)", patterns))
    finally:
        await conn.close()


async def in_clear(url: str, needles: set[int]) -> dict[str, int]:
    """Rows of any table whose text holds one of the ids, by table."""
    pattern = re.compile(r"\b(" + "|".join(str(n) for n in sorted(needles)) + r")\b")
    conn = await asyncpg.connect(_dsn(url))
    found: dict[str, int] = {}
    try:
        for (table,) in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"):
            rows = await conn.fetch(f'SELECT t::text FROM "{table}" t')
            if hits := sum(1 for (row,) in rows if pattern.search(row)):
                found[table] = hits
    finally:
        await conn.close()
    return found


async def deadlocks(url: str) -> int:
    """PostgreSQL's count of deadlocks in the database since its statistics began."""
    conn = await asyncpg.connect(_dsn(url))
    try:
        return int(await conn.fetchval("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"))
    finally:
        await conn.close()


async def test_three_processes_a_database_restart_a_freeze_a_kill_and_a_forget_lose_and_resurrect_nothing(
    private_postgres: PrivateServer, tmp_path: Path
) -> None:
    url = private_postgres.url
    engine = create_engine(url)
    await upgrade(engine)
    await engine.dispose()
    fleet = Fleet(url, tmp_path)
    await asyncio.gather(*(fleet.start(i) for i in range(3)))  # they meet the same new channels at once
    await asyncio.sleep(SECONDS)
    await asyncio.to_thread(private_postgres.restart)  # under all three, while they ingest
    await asyncio.sleep(SECONDS)

    # One process frozen inside its transaction: the others wait for it seconds, not for as long as it sleeps.
    async with fleet.frozen(0, url) as holding_locks:
        frozen_at, blocked = asyncio.get_running_loop().time(), await written_by(url, (1, 2))
        went_on = None
        while (waited := asyncio.get_running_loop().time() - frozen_at) < FROZEN_SECONDS:
            await asyncio.sleep(0.5)
            if went_on is None and await written_by(url, (1, 2)) > blocked:
                went_on = waited
        print(
            f"frozen {FROZEN_SECONDS:g} s, holding locks others wait for: {holding_locks}; the others wrote after"
            f" {went_on} s"
        )
        assert went_on is not None, f"the others' writes waited for the frozen process all its {FROZEN_SECONDS:g} s"
    await asyncio.sleep(SECONDS)

    fleet.kill(2)  # what it held in memory is lost with it
    down = fleet.said_while_down(300)
    carol, alice = fleet.ids["carol"], fleet.ids["alice"]
    asked_at = discord.utils.utcnow()
    asked = discord.utils.time_snowflake(asked_at)
    await forget(fleet, carol)  # while the others still deliver, embed and hold her messages
    done = discord.utils.time_snowflake(discord.utils.utcnow())
    # Then (the phase the others deliver in before process 2 comes back) an admin's process opts alice out and in.
    span = await opted_out_for_a_while(fleet, alice)
    await fleet.start(12, catch_up=False)  # process 2 again, catching up on READY
    await asyncio.to_thread(private_postgres.restart)  # the database comes back together with it (issue 37 item 1)
    await fleet.caught_up(12)
    await asyncio.sleep(SECONDS)
    errors = await fleet.stop_all()

    said = fleet.said()
    rows, _, _ = await stored_rows(url)
    missing_down = set(down) - set(rows)
    assert not missing_down, (
        f"{len(missing_down)} of the {len(down)} messages said while process 2 was down are missing"
    )
    # Her messages said before the forget-me are forgotten wherever they were; those said after it are new.
    forgotten = {m for m, author in said.items() if author == carol and m < asked}
    # Alice's, said while she was opted out (a snowflake's time against the moments around her two choices).
    withheld = {m for m, author in said.items() if author == alice and span[1] <= _said_at(m) <= span[2]}
    unsure = {m for m, author in said.items() if author == alice and span[0] <= _said_at(m) <= span[3]}
    assert withheld, "nothing was said while she was opted out"
    expected = {m for m in said if m not in forgotten | unsure and not (said[m] == carol and m < done)}
    missing = expected - set(rows)
    assert not missing, f"{len(missing)} of {len(expected)} messages said were never stored"
    assert set(rows) <= set(said), f"{len(set(rows) - set(said))} stored messages nobody said"
    back = forgotten & set(rows)
    assert not back, f"{len(back)} of the {len(forgotten)} forgotten member's messages came back"
    back = withheld & set(rows)
    assert not back, f"{len(back)} of the {len(withheld)} messages said while opted out were stored"
    checked = create_engine(url)
    try:
        assert await forgotten_in_clear(checked, carol, said_until=asked_at) == []
    finally:
        await checked.dispose()
    assert await mentions_unnamed(url) > 0  # bob named her before, and his words were kept
    assert not await in_clear(url, forgotten), "a forgotten message's id is still kept"
    assert not (await in_clear(url, {carol})).keys() & {"memory_changes", "tombstones"}  # who was forgotten
    assert not spill_left(tmp_path)
    assert not [i for i, err in errors.items() if "CRITICAL" in err], errors
    server_log = (private_postgres.data.parent / "log").read_text()
    assert "deadlock detected" not in server_log and await deadlocks(url) == 0
    assert not any("DeadlockDetected" in err for err in errors.values())


async def test_one_process_on_sqlite_killed_and_started_again_loses_nothing(tmp_path: Path) -> None:
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'elefant.db'}"
    fleet = Fleet(db_url, tmp_path)
    await fleet.start(0)
    await asyncio.sleep(SECONDS)
    fleet.kill(0)
    down = fleet.said_while_down(20)
    await fleet.start(10)  # the same directory, its own id range
    await asyncio.sleep(SECONDS)
    await fleet.stop_all()
    rows, _, dead = await stored_rows(db_url)
    said = fleet.said()
    assert set(down) <= set(rows)
    assert set(rows) == set(said), f"{len(set(said) - set(rows))} lost, {len(set(rows) - set(said))} invented"
    assert dead == 0
