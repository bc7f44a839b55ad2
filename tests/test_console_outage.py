"""The console stops within seconds once PostgreSQL is gone, on /quit, end of input or SIGTERM, keeping what it could
not store in a spill file (issue 37, finding 13: the flush after the input loop waited for storage forever)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.children import die_with_parent
from tests.private_postgres import PrivateServer

ROOT = Path(__file__).resolve().parents[1]
HANG_GUARD_SECONDS = 60  # INGEST_SHUTDOWN_SECONDS is 2 here: a stop takes seconds; only a hang comes near this


async def _line_containing(stream: asyncio.StreamReader, words: str) -> str:
    while line := (await stream.readline()).decode():
        if words in line:
            return line
    raise AssertionError(f"the console ended before printing {words!r}")


@pytest.mark.parametrize("ending", ["/quit", "end of input", "SIGTERM"])
async def test_the_console_stops_and_spills_once_postgres_is_gone(
    private_postgres: PrivateServer, tmp_path: Path, ending: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "LLM_PROVIDER"}}
    env |= {
        "DATABASE_URL": private_postgres.url,
        "DATA_DIR": str(tmp_path),
        "EMBEDDING_MODEL": "none",
        "INGEST_SHUTDOWN_SECONDS": "2",
        "PYTHONPATH": str(ROOT),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "console",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        process.stdin.write(b"Elefant, remember that I like green tea\n")
        await asyncio.wait_for(_line_containing(process.stdout, "Elefant: "), HANG_GUARD_SECONDS)
        private_postgres.stop()
        process.stdin.write(b"the line said while the database is away\n")
        await asyncio.wait_for(_line_containing(process.stdout, "database is away"), HANG_GUARD_SECONDS)
        if ending == "/quit":
            process.stdin.write(b"/quit\n")
        elif ending == "end of input":
            process.stdin.close()
        else:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), HANG_GUARD_SECONDS)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stderr = (await process.stderr.read()).decode()
    assert process.returncode == 0, stderr
    [spill] = await asyncio.to_thread(lambda: list(tmp_path.glob("ingest-spill-*.jsonl")))
    assert "the line said while the database is away" in await asyncio.to_thread(spill.read_text)
    assert "kept in" in stderr
