"""SQLite has one bot process: a second bot (or console) on the same file is refused in one sentence, while the
short commands still work beside the running one (real processes)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from bot import console
from tests.children import die_with_parent

ROOT = Path(__file__).resolve().parents[2]


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "DATABASE_URL"}}
    return {
        **env,
        "DATABASE_URL": f"sqlite:///{tmp_path}/elefant.db",
        "EMBEDDING_MODEL": "none",
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "WARNING",  # faiss announces itself at INFO when imported
    }


async def bot(tmp_path: Path, *args: str, stdin: int | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        preexec_fn=die_with_parent,
        cwd=tmp_path,
        env=environment(tmp_path),
        stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finished(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_second_bot_on_one_sqlite_file_is_refused_and_short_commands_still_work(tmp_path):
    first = await bot(tmp_path, "console", stdin=asyncio.subprocess.PIPE)
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(b"Elefant, remember that I like green tea\n/stats\n")
    await first.stdin.drain()
    while b"(messages" not in (line := await asyncio.wait_for(first.stdout.readline(), 120)):
        if not line:  # the console ended: at its end of output readline returns b"" at once, for ever
            code, _, err = await finished(first)
            raise AssertionError(f"the console ended ({code}) before answering /stats: {err}")
    # the console is running: it holds the database

    for second in ("console", "run"):  # run without a token is the console too
        code, _, err = await finished(await bot(tmp_path, second))
        assert code == 1
        assert err.strip().splitlines()[-1:] == [  # after run's notice that it starts the console
            f"Another Elefant bot or console is already running on {tmp_path / 'elefant.db'}: stop it first, or use "
            "PostgreSQL (DATABASE_URL) to run several processes on one database."
        ]
        assert "Traceback" not in err

    guild = str(console.GUILD)  # a guild with nothing stored is refused; the console's is not empty
    code, out, err = await finished(await bot(tmp_path, "stats", "--guild", guild))
    assert code == 0 and "messages" in out, err
    code, out, err = await finished(await bot(tmp_path, "export", "--guild", guild, "--user", "1"))
    assert code == 0, err

    first.stdin.close()  # the first one ends ...
    code, _, err = await finished(first)
    assert code == 0, err
    code, _, err = await finished(await bot(tmp_path, "console"))  # ... and the next bot may start
    assert code == 0, err
