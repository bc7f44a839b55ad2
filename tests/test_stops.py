"""Spans the run, console and import commands and the spill: stopping each mid-burst loses nothing accepted.

Stopping the real commands mid-burst (SIGTERM / SIGINT to subprocesses), on both databases: what was accepted is
stored or kept in a spill file (stored + spilled = accepted), the next start stores what was spilled, and an
interrupted import says how far it got and finishes when run again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import re
import select as io_select
import signal
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.memory.intake.spill import decode
from db.models import ChatMessage
from db.records import IncomingMessage
from tests.children import die_with_parent
from tests.export_files import write_export

ROOT = Path(__file__).resolve().parents[1]


def environment(db_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "DATABASE_URL"}}
    return {
        **env,
        "DATABASE_URL": db_url,
        "PYTHONPATH": str(ROOT),
        "INGEST_SHUTDOWN_SECONDS": "1",  # how long a stop waits for storage before it spills
        "LOG_LEVEL": "INFO",
        **extra,
    }


async def start(
    args: list[str], cwd: Path, env: dict[str, str], *, stdin: int | None = None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        preexec_fn=die_with_parent,
        cwd=cwd,
        env=env,
        stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def stored(engine: AsyncEngine) -> dict[int, str]:
    async with engine.connect() as conn:
        return dict((await conn.execute(select(ChatMessage.message_id, ChatMessage.message_text))).all())


def spilled(cwd: Path) -> dict[int, str]:
    """Messages kept in spill files under cwd/data (the header line skipped)."""
    found: dict[int, str] = {}
    for path in sorted((cwd / "data").glob("ingest-spill-*.jsonl")):
        for line in path.read_bytes().splitlines()[1:]:
            op = decode(line)
            if isinstance(op, IncomingMessage):
                found[op.message_id] = op.content
    return found


@contextlib.asynccontextmanager
async def chat_table_away(engine: AsyncEngine):
    async with engine.begin() as conn:
        await conn.execute(text("ALTER TABLE chat_history RENAME TO chat_history_away"))
    try:
        yield
    finally:
        async with engine.begin() as conn:
            await conn.execute(text("ALTER TABLE chat_history_away RENAME TO chat_history"))


async def wait_for_line(stream: asyncio.StreamReader, pattern: str) -> str:
    async def find() -> str:
        while line := (await stream.readline()).decode():
            if re.search(pattern, line):
                return line.rstrip("\n")
        raise AssertionError(f"the child ended without printing {pattern!r}")

    return await asyncio.wait_for(find(), 60)


async def until(count: Callable[[], Awaitable[int]], *, more_than: int, what: str) -> None:
    """Poll `count` until it passes `more_than` (a minute at most: a hang guard)."""
    deadline = time.monotonic() + 60
    while (seen := await count()) <= more_than:
        assert time.monotonic() < deadline, f"only {seen} {what} after a minute"
        await asyncio.sleep(0.1)


async def _count_stored(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(ChatMessage))).scalar_one())


def _spill_lines(cwd: Path) -> int:
    """Records in the overflow files so far (each file's header line not counted; a line being written is)."""
    return sum(max(path.read_bytes().count(b"\n") - 1, 0) for path in (cwd / "data").glob("ingest-spill-*.jsonl"))


def one_spill_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "could not be stored" in line]
    assert len(lines) == 1, stderr
    return lines[0]


async def test_sigterm_to_run_while_storage_is_away_keeps_every_accepted_message(db_url, engine, tmp_path):
    # dpytest's fake guild lists its members only to a bot with the members intent
    env = environment(
        db_url,
        DISCORD_TOKEN="fake.token.value",
        DISCORD_MEMBERS_INTENT="true",
        INGEST_FLUSH_MS="50",
        INGEST_QUEUE_MAX="300",
    )
    child = await start(["-m", "tests.run_child"], tmp_path, env)
    assert child.stdout is not None
    await wait_for_line(child.stdout, "READY")
    # Waited for, not slept on: on a busy machine the burst may need many times longer to get this far.
    await until(lambda: _count_stored(engine), more_than=50, what="messages stored")
    async with chat_table_away(engine):
        # ... and now they pile up: in memory (INGEST_QUEUE_MAX), then in the overflow file
        await until(lambda: asyncio.to_thread(_spill_lines, tmp_path), more_than=50, what="lines spilled")
        child.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(child.communicate(), 60)
        assert child.returncode == 0, err.decode()
    accepted = {int(line) for line in out.split()}
    kept_in_db, kept_on_disk = set(await stored(engine)), set(spilled(tmp_path))
    assert len(kept_in_db) > 50 and len(kept_on_disk) > 50  # both paths were really taken
    assert kept_in_db | kept_on_disk == accepted  # stored + spilled = accepted
    assert "when Elefant next starts" in one_spill_sentence(err.decode())

    # The next start on this database stores what the stop had to keep on disk, and removes the file.
    async with engine.connect() as conn:
        guild = (await conn.execute(select(ChatMessage.guild_id).limit(1))).scalar()
    again = await start(["-m", "bot", "stats", "--guild", str(guild)], tmp_path, environment(db_url))
    _, err = await asyncio.wait_for(again.communicate(), 60)
    assert again.returncode == 0, err.decode()
    assert set(await stored(engine)) == accepted
    assert list((tmp_path / "data").glob("ingest-spill-*.jsonl")) == []


async def _console_mid_script(db_url: str, engine: AsyncEngine, tmp_path: Path, sig: signal.Signals) -> None:
    child = await start(["-m", "bot", "console"], tmp_path, environment(db_url), stdin=asyncio.subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    async def feed() -> None:  # a long script, written as fast as the console reads it
        assert child.stdin is not None
        with contextlib.suppress(ConnectionError):
            for start_at in range(0, 200_000, 1000):
                child.stdin.write(
                    "".join(f"line {i} of the script\n" for i in range(start_at, start_at + 1000)).encode()
                )
                await child.stdin.drain()

    feeder = asyncio.create_task(feed())
    printed = [await wait_for_line(child.stdout, r"^\[\d+\] alice: line ") for _ in range(300)]
    child.send_signal(sig)
    out, err = await asyncio.wait_for(child.communicate(), 60)
    feeder.cancel()
    assert child.returncode == 0, err.decode()
    lines = printed + out.decode().splitlines()
    accepted = {line.split(": ", 1)[1] for line in lines if re.match(r"^\[\d+\] alice: ", line)}
    assert 300 <= len(accepted) < 200_000, len(accepted)  # stopped mid-script
    assert set((await stored(engine)).values()) | set(spilled(tmp_path).values()) == accepted
    assert "Traceback" not in err.decode()


async def test_sigterm_to_console_mid_script_stores_every_line_it_printed(db_url, engine, tmp_path):
    await _console_mid_script(db_url, engine, tmp_path, signal.SIGTERM)


async def test_sigint_to_console_mid_script_stores_every_line_it_printed(db_url, engine, tmp_path):
    await _console_mid_script(db_url, engine, tmp_path, signal.SIGINT)


def duplicates(count: int) -> str:
    return f"{count:,} duplicate{'s' if count != 1 else ''}"


def people_ids(count: int) -> list[int]:
    """Message ids of write_export's messages that are imported (every 10th is by a bot, skipped)."""
    return [2**60 + 1_000_000 + i for i in range(count) if i % 10 != 9]


async def test_an_import_stopped_by_sigterm_says_how_far_it_got_and_finishes_when_run_again(db_url, engine, tmp_path):
    export = write_export(tmp_path / "general.json", 20_000)
    env = environment(db_url)
    child = await start(["-m", "bot", "import", str(export)], tmp_path, env)
    assert child.stderr is not None
    await wait_for_line(child.stderr, "importing general.json")
    child.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(child.communicate(), 60)
    said = err.decode()
    assert child.returncode == 128 + signal.SIGTERM, said
    found = re.search(
        r"Import stopped after ([\d,]+) of 20,000 messages of general\.json; run the same command again", said
    )
    assert found, said
    done = int(found.group(1).replace(",", ""))
    assert 0 < done < 20_000
    # Exactly what it had read, nothing lost: stored, or kept in a spill file when the queue held more than the
    # stop's INGEST_SHUTDOWN_SECONDS could store (stored + spilled = accepted).
    assert set(await stored(engine)) | set(spilled(tmp_path)) == set(people_ids(done))
    assert out == b""

    again = await start(["-m", "bot", "import", str(export)], tmp_path, env)
    out, err = await asyncio.wait_for(again.communicate(), 120)
    assert again.returncode == 0, err.decode()
    # Stored now: what the stop left; the rest was stored by the first run.
    assert (
        f"{18_000 - len(people_ids(done)):,} stored, {duplicates(len(people_ids(done)))}, 2,000 skipped" in out.decode()
    )
    assert set(await stored(engine)) == set(people_ids(20_000))


async def test_an_import_stopped_by_sigint_while_storage_is_away_spills_and_finishes_when_run_again(
    db_url, engine, tmp_path
):
    export = write_export(tmp_path / "general.json", 5_000)
    env = environment(db_url, INGEST_QUEUE_MAX="2000")
    async with chat_table_away(engine):
        child = await start(["-m", "bot", "import", str(export)], tmp_path, env)
        assert child.stderr is not None
        await wait_for_line(child.stderr, "importing general.json")
        await wait_for_line(child.stderr, "storage down")  # storage is away: the import waits for room
        child.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(child.communicate(), 60)
    said = err.decode()
    assert child.returncode == 128 + signal.SIGINT, said
    done = int(re.search(r"Import stopped after ([\d,]+) of 5,000", said).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert 0 < done < 5_000
    assert "when Elefant next starts" in one_spill_sentence(said)
    assert await stored(engine) == {}
    assert set(spilled(tmp_path)) == set(people_ids(done))  # stored + spilled = accepted

    again = await start(["-m", "bot", "import", str(export)], tmp_path, env)
    out, err = await asyncio.wait_for(again.communicate(), 120)
    assert again.returncode == 0, err.decode()
    # What was spilled is stored at start, before the import: for the import, those are duplicates.
    assert f"{4_500 - len(people_ids(done)):,} stored, {duplicates(len(people_ids(done)))}, 500 skipped" in out.decode()
    assert set(await stored(engine)) == set(people_ids(5_000))
    assert list((tmp_path / "data").glob("ingest-spill-*.jsonl")) == []


def test_ctrl_c_at_the_console_prompt_stops_cleanly_and_keeps_what_was_said(tmp_path):
    """A person at a terminal: the prompt is waiting in input() when Ctrl-C comes."""
    env = environment(f"sqlite:///{tmp_path}/tty.db")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the console on a real terminal
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "bot", "console"], env)
    seen = b""

    def read_until(wanted: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60
        while wanted not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            if io_select.select([fd], [], [], 0.5)[0]:
                seen += os.read(fd, 4096)

    read_until(b"alice> ")
    os.write(fd, b"hello from a terminal\r")
    read_until(b"[1] alice: hello from a terminal")
    read_until(b"[1] alice: hello from a terminal\r\nalice> ")  # the next prompt: input() is waiting
    os.write(fd, b"\x03")  # Ctrl-C: the terminal sends SIGINT
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        while io_select.select([fd], [], [], 0.2)[0]:
            seen += os.read(fd, 4096)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    assert b"Traceback" not in seen
    rows = sqlite3.connect(tmp_path / "tty.db").execute("SELECT message_text FROM chat_history").fetchall()
    assert rows == [("hello from a terminal",)]
