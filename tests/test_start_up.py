"""Starting the real `python -m bot` the ways people get wrong: one sentence on stderr naming the setting and
the fix, exit code 1, no traceback (unless LOG_LEVEL=DEBUG asks for it). Also: `--help` imports nothing heavy,
and the installed `elefant` command is the same program.

Discord's answers (a wrong token, a privileged intent switched off, no network) are in
tests/discord/test_start_up.py, Google's in tests/llm/test_probe.py, settings refused before anything opens
in tests/test_settings.py.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import PG_BASE_URL

ROOT = Path(__file__).resolve().parents[1]
NO_DNS = Path(__file__).resolve().parent / "shim_no_dns"


def bot(
    tmp_path: Path, *args: str, executable: list[str] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python -m bot ARGS` as a person starts it: the default log level, nothing on stdin."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "DATABASE_URL", "LOG_LEVEL", "PYTHONPATH"}
    }
    return subprocess.run(
        [*(executable or [sys.executable, "-m", "bot"]), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        timeout=120,
        check=False,
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_sentence(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].endswith(".")
    return lines[0]


def test_nothing_listening_on_the_port(tmp_path):
    port = closed_port()
    line = one_sentence(bot(tmp_path, "run", DATABASE_URL=f"postgresql://postgres@127.0.0.1:{port}/elefant"))
    assert line == (
        f"The database in DATABASE_URL (postgresql+asyncpg://postgres@127.0.0.1:{port}/elefant) cannot be reached: "
        f"nothing accepts connections on 127.0.0.1:{port} (start PostgreSQL there, or correct the host or port in "
        "DATABASE_URL)."
    )


def test_a_host_that_does_not_resolve(tmp_path):
    url = "postgresql://elefant:secret@db.example.invalid:5432/elefant"
    line = one_sentence(bot(tmp_path, "run", DATABASE_URL=url, PYTHONPATH=os.pathsep.join([str(NO_DNS), str(ROOT)])))
    assert line == (
        "The database in DATABASE_URL (postgresql+asyncpg://elefant:***@db.example.invalid:5432/elefant) cannot be "
        "reached: the host db.example.invalid is unknown (check its spelling in DATABASE_URL, or this machine's "
        "network connection and DNS)."
    )


@pytest.fixture
def postgres() -> tuple[str, int]:
    """Host and port of the test PostgreSQL server (these tests only need it to answer)."""
    url = make_url(PG_BASE_URL)
    host, port = url.host or "localhost", url.port or 5432
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {host}:{port} is required in CI but unreachable: {exc!r}")
        pytest.skip(f"PostgreSQL unreachable ({exc!r})")
    return host, port


def test_a_database_name_the_server_does_not_have(tmp_path, postgres):
    host, port = postgres
    user = make_url(PG_BASE_URL).username
    url = make_url(PG_BASE_URL).set(drivername="postgresql", database="elefant_no_such_database")
    line = one_sentence(bot(tmp_path, "run", DATABASE_URL=url.render_as_string(hide_password=False)))
    shown = url.set(drivername="postgresql+asyncpg").render_as_string(hide_password=True)
    assert line == (
        f"The database in DATABASE_URL ({shown}) does not exist: PostgreSQL at {host}:{port} has no database "
        f"elefant_no_such_database (create it with `createdb -h {host} -p {port} -U {user} elefant_no_such_database`, "
        "or correct the database name in DATABASE_URL)."
    )


def test_a_user_the_server_does_not_know(tmp_path, postgres):
    url = make_url(PG_BASE_URL).set(drivername="postgresql", username="elefant_no_such_role", password=None)
    line = one_sentence(bot(tmp_path, "migrate", DATABASE_URL=url.render_as_string(hide_password=False)))
    shown = url.set(drivername="postgresql+asyncpg").render_as_string(hide_password=True)
    assert line == (
        f"The database in DATABASE_URL ({shown}) refused the user elefant_no_such_role: role "
        '"elefant_no_such_role" does not exist (correct the user name or password in DATABASE_URL, or create that '
        "role in PostgreSQL)."
    )


def test_a_file_that_is_not_an_sqlite_database(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("these are my notes, not a database\n" * 100)
    line = one_sentence(bot(tmp_path, "run", DATABASE_URL=f"sqlite:///{notes}"))
    assert line == (
        f"The database in DATABASE_URL (sqlite+aiosqlite:///{notes}) is not an SQLite database file (point "
        "DATABASE_URL at another file, or move this one away)."
    )
    assert notes.read_text() == "these are my notes, not a database\n" * 100


def test_a_database_folder_that_cannot_be_made(tmp_path):
    # As under /proc for root: nothing refuses the path until the folder is made (here: a link to a disk that is
    # not mounted). Any command meets it first; stats is one.
    (tmp_path / "data").symlink_to(tmp_path / "unmounted" / "data")
    url = f"sqlite:///{tmp_path}/data/elefant.db"
    line = one_sentence(bot(tmp_path, "stats", "--guild", "1", DATABASE_URL=url))
    assert line == (
        f"The database in DATABASE_URL (sqlite+aiosqlite:///{tmp_path}/data/elefant.db) cannot be created: the "
        f"folder {tmp_path}/data cannot be made (file exists); point DATABASE_URL at a folder this user can write in."
    )


def test_a_database_from_a_newer_elefant(tmp_path):
    path = tmp_path / "newer.db"
    assert bot(tmp_path, "migrate", DATABASE_URL=f"sqlite:///{path}").returncode == 0
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    line = one_sentence(bot(tmp_path, "stats", "--guild", "1", DATABASE_URL=f"sqlite:///{path}"))
    assert line == (
        f"The database in DATABASE_URL (sqlite+aiosqlite:///{path}) was set up by a newer version of Elefant (its "
        "schema revision '9999_from_the_future' is unknown here): update Elefant, or point DATABASE_URL at another "
        "database."
    )


def test_log_level_debug_adds_the_traceback(tmp_path):
    port = closed_port()
    result = bot(tmp_path, "run", DATABASE_URL=f"postgresql://postgres@127.0.0.1:{port}/elefant", LOG_LEVEL="DEBUG")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ConnectionRefusedError" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("The database in DATABASE_URL (")


# Imported by `--help` and nothing more: what takes seconds to import, or is only needed to do the work.
HEAVY = ("discord", "google", "alembic", "sqlalchemy", "pydantic", "pydantic_settings", "aiohttp", "numpy", "faiss")
COMMANDS = [
    "console", "context", "embed", "export", "import", "invite", "migrate", "purge", "recall", "run", "stats", "sync",
]  # fmt: skip


def importing(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str], set[str]]:
    """`python -m bot ARGS` under `-X importtime` (the real command, nothing wrapped): what it did, the lines it
    wrote to stderr, and every module it imported."""
    result = bot(tmp_path, *args, executable=[sys.executable, "-X", "importtime", "-m", "bot"], **env)
    lines = result.stderr.splitlines()
    names = [line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")]
    return result, [line for line in lines if not line.startswith("import time:")], set(names[1:])  # [0]: header


def imported_by(tmp_path: Path, *args: str) -> set[str]:
    """Top-level packages `python -m bot ARGS` imports."""
    result, _, modules = importing(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout
    return {name.split(".")[0] for name in modules}


def test_help_imports_nothing_heavy(tmp_path):
    modules = imported_by(tmp_path, "--help")
    assert "click" in modules and "bot" in modules  # the measurement itself works
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))


def test_each_commands_help_imports_nothing_heavy(tmp_path):
    for command in COMMANDS:
        modules = imported_by(tmp_path, command, "--help")
        assert modules.isdisjoint(HEAVY), (command, sorted(modules & set(HEAVY)))


# What a command loads to do its work: discord.py, the model's SDK and HTTP client, the embedding model, the vector
# index, migrations and the database models, the bot and its memory.
WORK = (
    "discord", "google", "aiohttp", "onnxruntime", "numpy", "faiss", "alembic",
    "db.engine", "db.models", "bot.app", "bot.memory", "bot.discord_bot",
)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (
            ["invite"],
            {},
            "Error: pass --client-id (the Application ID on the developer portal's General Information page) or set "
            "DISCORD_TOKEN",
        ),
        (
            ["invite"],
            {"DISCORD_TOKEN": "not-a-bot-token"},
            "Error: DISCORD_TOKEN does not look like a bot token (it starts with the bot's id); copy it again from the "
            "developer portal, or pass --client-id (the Application ID on its General Information page)",
        ),
        (
            ["sync"],
            {},
            "`sync` needs DISCORD_TOKEN (the bot's token from https://discord.com/developers/applications → your "
            "application → Bot).",
        ),
        (["import", "missing.json"], {}, "Not imported: missing.json: cannot be read (No such file or directory)"),
    ],
)
def test_input_is_refused_before_the_heavy_imports_and_the_database(tmp_path, args, env, said):
    # These took 5-7 s to refuse: the bot, the model's SDK and the database were loaded first. (SQLAlchemy is
    # loaded by the settings, which parse DATABASE_URL with it.)
    database = tmp_path / "never.db"
    result, lines, modules = importing(tmp_path, *args, DATABASE_URL=f"sqlite:///{database}", **env)
    assert result.returncode in (1, 2) and lines[-1] == said, result.stderr
    assert not {m for m in modules if m.startswith(WORK)}, sorted(m for m in modules if m.startswith(WORK))
    assert not database.exists()


def test_help_lists_every_command(tmp_path):
    listed = bot(tmp_path, "--help").stdout.split("Commands:", 1)[1].split()
    assert all(command in listed for command in COMMANDS)


def test_the_installed_elefant_command_is_the_same_program(tmp_path):
    script = Path(sys.executable).with_name("elefant")
    assert script.is_file(), f"{script} is missing: run `make install` (pyproject.toml declares it)"
    result = bot(tmp_path, "--help", executable=[str(script)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: elefant [OPTIONS] COMMAND [ARGS]...")
    assert all(f"  {command} " in result.stdout for command in COMMANDS)
    run_help = bot(tmp_path, "run", "--help", executable=[str(script)])
    assert run_help.returncode == 0 and run_help.stdout.startswith("Usage: elefant run [OPTIONS]")
