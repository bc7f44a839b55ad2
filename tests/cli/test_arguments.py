"""Every Discord id and every moment the command line takes, in every command, refused when Discord cannot have it:
one line on stderr, exit code 2, no traceback, the database untouched (a refused purge deletes nothing).

The options are found by walking the commands, so an id or date option added later is checked here too; an integer
option that is not a `Snowflake` fails `test_every_integer_option_is_a_discord_id`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bot.app import open_app
from bot.cli import main
from bot.cli.params import IsoDateTime, Snowflake
from bot.settings import load_settings
from tests.factories import ALICE, GUILD, T0, message

ROOT = Path(__file__).resolve().parents[2]
BAD_IDS = ["0", "-1", "-5", str(2**63), "99999999999999999999", "12ab", ""]
# Values read from the clock get ids of their own: pytest-xdist's workers must collect the same test names, and a
# worker that collects a minute later would name "now + 3 days" otherwise.
SOON = pytest.param((datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M"), id="three days ahead")
BAD_DATES = [
    "0001-01-01",
    "9999-12-31",
    "2014-12-31T23:59:59",  # a second before Discord's epoch
    "0001-01-01T00:00+05:00",  # before year 1 in UTC
    "9999-12-31T23:00-05:00",  # after year 9999 in UTC
    SOON,
]
ID_SENTENCE = (
    "is not a Discord id; give a whole number from 1 to 9223372036854775807 (Discord's Copy ID, in Developer Mode)."
)
# A valid invocation of each command that takes an id or a date: the option under test is added to it (replacing
# the same option). purge takes exactly one of --user, --channel, --before, --all, so --all only with --guild.
VALID: dict[str, list[str]] = {
    "prompt": ["--guild", str(GUILD), "--user", str(ALICE), "hello"],
    "recall": ["--guild", str(GUILD), "what does alice bake?"],
    "context": ["--guild", str(GUILD), "--user", str(ALICE)],
    "stats": ["--guild", str(GUILD)],
    "export": ["--guild", str(GUILD), "--user", str(ALICE)],
    "purge": ["--guild", str(GUILD), "--yes"],
    "invite": [],
    "console": [],
}


def options_of(kind: type[click.ParamType]) -> list[tuple[str, str]]:
    """(command, option) for every option of every command whose values are of this type."""
    return [
        (name, param.opts[0])
        for name, command in sorted(main.commands.items())
        for param in command.params
        if isinstance(param.type, kind)
    ]


def test_the_walk_finds_the_options_people_reported():
    ids, dates = options_of(Snowflake), options_of(IsoDateTime)
    assert {("prompt", "--guild"), ("prompt", "--user"), ("recall", "--guild"), ("context", "--guild")} <= set(ids)
    assert {("stats", "--guild"), ("purge", "--guild"), ("export", "--user"), ("purge", "--channel")} <= set(ids)
    assert {("prompt", "--at"), ("purge", "--before")} <= set(dates)
    assert {command for command, _ in ids + dates} <= VALID.keys()


def test_every_integer_option_is_a_discord_id():
    """Every number the commands take is a Discord id: a plain int would let 2^63 through to the database."""
    numbers = [
        (name, param.name)
        for name, command in main.commands.items()
        for param in command.params
        if isinstance(param.type, click.types.IntParamType | click.types.FloatParamType)
    ]
    assert numbers == []


def with_option(command: str, option: str, value: str) -> list[str]:
    """The command's valid invocation with OPTION set to VALUE (in place of its own value, if it has one)."""
    args = VALID[command]
    at = args.index(option) if option in args else None
    kept = args if at is None else args[:at] + args[at + 2 :]
    extra = ["--all"] if command == "purge" and option == "--guild" else []
    return [command, *kept, *extra, option, value]


async def _seed() -> None:
    async with open_app(load_settings()) as app:
        await app.memory.intake.message(message("I bake bread on Sundays"), wait=True)
        await app.memory.intake.message(message("rye, mostly", at=T0 + timedelta(minutes=1)), wait=True)
        await app.memory.facts.remember(GUILD, ALICE, "alice bakes bread", requested_by=ALICE)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One seeded SQLite file for the module: every test checks that it left it as it was."""
    path = tmp_path_factory.mktemp("arguments") / "cli.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", f"sqlite:///{path}")
        patch.setenv("EMBEDDING_MODEL", "none")
        asyncio.run(_seed())
    return path


def contents(path: Path) -> dict[str, list[str]]:
    """Every table's rows (as text, sorted)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = [name for (name,) in conn.execute("select name from sqlite_master where type = 'table'")]
        return {name: sorted(map(repr, conn.execute(f'select * from "{name}"'))) for name in tables}


@pytest.fixture
def seeded(database: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The seeded database as DATABASE_URL."""
    monkeypatch.chdir(tmp_path)
    for name in ("DISCORD_TOKEN", "GEMINI_API_KEY", "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("EMBEDDING_MODEL", "none")
    return database


@pytest.fixture
def untouched(seeded: Path):
    """The seeded database, checked after the test to hold exactly what it held before."""
    before = contents(seeded)
    assert len(before["chat_history"]) == 2 and len(before["user_facts"]) == 1
    yield seeded
    assert contents(seeded) == before


def refused(args: list[str]) -> str:
    """The one line a refused invocation wrote, after checking how it ended."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (args, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # not an exception click turned into exit 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("value", BAD_IDS)
@pytest.mark.parametrize(("command", "option"), options_of(Snowflake))
def test_an_id_discord_cannot_have_is_one_line_and_exit_2(untouched, command, option, value):
    line = refused(with_option(command, option, value))
    assert line == f"Error: Invalid value for '{option}': {value!r} {ID_SENTENCE}"


@pytest.mark.parametrize("value", BAD_DATES)
@pytest.mark.parametrize(("command", "option"), options_of(IsoDateTime))
def test_a_moment_no_discord_message_can_have_is_one_line_and_exit_2(untouched, command, option, value):
    line = refused(with_option(command, option, value))
    prefix = f"Error: Invalid value for '{option}': {value!r} is outside the time Discord messages can have; give a "
    assert line.startswith(prefix + "moment from 2015-01-01 to "), line
    latest = datetime.strptime(line.removeprefix(prefix + "moment from 2015-01-01 to "), "%Y-%m-%d %H:%M UTC.")
    assert abs(latest.replace(tzinfo=UTC) - (datetime.now(UTC) + timedelta(days=1))) < timedelta(minutes=10)


def test_a_date_that_is_not_one_is_one_line_too(untouched):
    line = refused(["context", "--guild", str(GUILD), "--user", str(ALICE), "--at", "22.11.2026"])
    assert line == (
        "Error: Invalid value for '--at': '22.11.2026' is not a date and time; write it like 2026-11-22, "
        "2026-11-22 12:00 or 2026-11-22T12:00:30+01:00."
    )


@pytest.mark.parametrize("value", [1, 2**63 - 1, f" {GUILD} "])
def test_the_ends_of_the_id_range_are_taken(value):
    assert Snowflake().convert(value, None, None) == int(value)


@pytest.mark.parametrize(
    "typed",
    [
        "2015-01-01",
        "2014-12-31T23:30-01:00",  # 00:30 UTC
        pytest.param(datetime.now(UTC).isoformat(), id="now"),
        pytest.param((datetime.now(UTC) + timedelta(hours=23)).isoformat(), id="23 hours ahead"),
    ],
)
def test_the_ends_of_the_time_range_are_taken(typed):
    moment = datetime.fromisoformat(typed)
    assert IsoDateTime().convert(typed, None, None) == (moment if moment.tzinfo else moment.replace(tzinfo=UTC))


def test_valid_ids_and_moments_still_reach_the_commands(seeded):
    """The refused invocations' shape with the guild's real ids and a moment in range: they run (last: `context`
    records the model call it made)."""
    stats = CliRunner().invoke(main, ["stats", "--guild", str(GUILD)])
    assert stats.exit_code == 0, stats.output
    assert "messages                 2\n" in stats.stdout
    at = (T0 + timedelta(hours=6)).isoformat()
    context = CliRunner().invoke(main, ["context", "--guild", str(GUILD), "--user", str(ALICE), "--at", at])
    assert context.exit_code == 0, context.output
    assert "alice bakes bread" in context.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["prompt", "--guild", str(2**63), "--user", "1", "hi"],
        ["recall", "--guild", "1", "--channel", str(2**64), "q"],
        ["context", "--guild", "1", "--user", str(2**63)],
        ["stats", "--guild", str(2**63)],
        ["purge", "--guild", "1", "--user", str(2**63), "--yes"],
        ["prompt", "--guild", "1", "--user", "1", "--at", "9999-12-31", "hi"],
        ["prompt", "--guild", "1", "--user", "1", "--at", "0001-01-01", "hi"],
        ["purge", "--guild", "1", "--before", "0001-01-01", "--yes"],
        ["prompt", "--guild", "1", "--user", "-5", "hi"],
        ["export", "--guild", "1", "--user", "-1"],
        ["purge", "--guild", "1", "--channel", "0", "--yes"],
    ],
)
def test_the_reported_invocations_are_one_line_from_the_real_command(tmp_path, args):
    """As reported, through `python -m bot`: refused before anything is opened (no database file appears)."""
    database = tmp_path / "never.db"
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "LOG_LEVEL"}}
    result = subprocess.run(
        [sys.executable, "-m", "bot", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT), "DATABASE_URL": f"sqlite:///{database}"},
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: Invalid value for '--"), line
    assert "is not a Discord id" in line or "is outside the time Discord messages can have" in line
    assert not database.exists()
