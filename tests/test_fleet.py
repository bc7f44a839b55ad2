"""Spans the run path, intake, tombstones, catch-up and the CLI: several bot processes run as operators run them.

Three `python -m bot run` processes (tests/fleet_child.py: the gateway faked, everything else real) share a
private PostgreSQL server that is restarted under them; one of them is killed with SIGKILL and started again; a
member is forgotten from the command line while the processes still deliver and hold her messages, and another is
opted out and back in by an admin's process before the killed one reconnects. Afterwards every message "Discord"
has is stored exactly once, except the forgotten member's, of whom nothing is left (others' mentions of her
included), and what the other said while opted out. The same on SQLite with one process, SIGKILL and a restart,
and messages said while it was down.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from datetime import datetime
from pathlib import Path

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


class Fleet:
    def __init__(self, db_url: str, root: Path) -> None:
        self.db_url, self.root = db_url, root
        self.log = root / "discord.jsonl"
        self.base = discord.utils.time_snowflake(discord.utils.utcnow())
        self.processes: dict[int, asyncio.subprocess.Process] = {}
        self.ids: dict[str, int] = {}

    async def start(self, index: int) -> None:
        home = self.root / f"p{index % 10}"  # a restarted process keeps its directory (and spill files)
        home.mkdir(exist_ok=True)
        env = environment(
            self.db_url,
            DISCORD_TOKEN="fake.token.value",
            DISCORD_MEMBERS_INTENT="true",
            DATA_DIR=str(home / "data"),
            EMBEDDING_MODEL="none",
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
        await wait_for_line(child.stdout, "CAUGHT UP")  # a busy machine may take longer than a phase

    def kill(self, index: int) -> None:
        self.processes.pop(index).kill()

    async def stop_all(self) -> list[str]:
        errors = []
        for child in self.processes.values():
            child.send_signal(signal.SIGTERM)
        for child in self.processes.values():
            _, err = await asyncio.wait_for(child.communicate(), 120)
            assert child.returncode == 0, err.decode()[-3000:]
            errors.append(err.decode())
            (self.root / f"stderr-{child.pid}.log").write_text(err.decode())
        return errors

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


def _said_at(message_id: int) -> datetime:
    return discord.utils.snowflake_time(message_id)


def spill_left(root: Path) -> list[Path]:
    return [p for p in root.glob("p*/data/ingest-spill-*.jsonl") if p.read_text().count("\n") > 1]


async def forget(fleet: Fleet, user: int) -> None:
    env = environment(fleet.db_url, DATA_DIR=str(fleet.root / "cli"))
    cli = await start(
        ["-m", "bot", "purge", "--guild", str(fleet.ids["guild"]), "--user", str(user), "--yes"], fleet.root, env
    )
    _, err = await asyncio.wait_for(cli.communicate(), 120)
    assert cli.returncode == 0, err.decode()


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


async def test_three_processes_a_database_restart_a_kill_and_a_forget_lose_and_resurrect_nothing(
    private_postgres: PrivateServer, tmp_path: Path
) -> None:
    engine = create_engine(private_postgres.url)
    await upgrade(engine)
    await engine.dispose()
    fleet = Fleet(private_postgres.url, tmp_path)
    await asyncio.gather(*(fleet.start(i) for i in range(3)))  # they meet the same new channels at once
    await asyncio.sleep(SECONDS)
    await asyncio.to_thread(private_postgres.restart)  # under all three, while they ingest
    await asyncio.sleep(SECONDS)
    fleet.kill(2)  # what it held in memory is lost with it
    down = fleet.said_while_down(20)
    carol, alice = fleet.ids["carol"], fleet.ids["alice"]
    asked_at = discord.utils.utcnow()
    asked = discord.utils.time_snowflake(asked_at)
    await forget(fleet, carol)  # while the others still deliver and hold her messages
    done = discord.utils.time_snowflake(discord.utils.utcnow())
    # Then (the phase the others deliver in before process 2 comes back) an admin's process opts alice out and in.
    span = await opted_out_for_a_while(fleet, alice)
    await fleet.start(12)  # process 2 again, catching up on READY
    await asyncio.sleep(SECONDS)
    errors = await fleet.stop_all()

    said = fleet.said()
    rows, _, _ = await stored_rows(private_postgres.url)
    assert set(down) <= set(rows)
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
    engine = create_engine(private_postgres.url)
    try:
        assert await forgotten_in_clear(engine, carol, said_until=asked_at) == []
    finally:
        await engine.dispose()
    assert await mentions_unnamed(private_postgres.url) > 0  # bob named her before, and his words were kept
    assert not spill_left(tmp_path)
    assert not any("CRITICAL" in err for err in errors), [e for e in errors if "CRITICAL" in e]


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
