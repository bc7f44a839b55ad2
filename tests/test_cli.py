"""Spans bot/cli/ (runner, database, reading): the command line as people use it, not one command module.

Migrate, a bad setting, guilds it does not know, what a purge asks, dates as people type them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bot.app import open_app
from bot.cli import IsoDateTime, main
from bot.settings import load_settings
from tests.children import die_with_parent
from tests.factories import ALICE, BOB, CHANNEL, GUILD, OTHER_GUILD, T0, message

OTHER_CHANNEL = CHANNEL + 1
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/cli.db")
    return tmp_path


async def _seed() -> None:
    """Alice speaks twice in one channel and has a fact; Bob mentions her in another channel the next day."""
    async with open_app(load_settings()) as app:
        memory = app.memory
        await memory.intake.message(message("I bake bread on Sundays"), wait=True)
        await memory.intake.message(message("rye, mostly", at=T0 + timedelta(minutes=1)), wait=True)
        await memory.intake.message(
            message(
                f"<@{ALICE}> your bread was great", author=BOB, name="bob", channel=OTHER_CHANNEL, at=T0 + timedelta(1)
            ),
            wait=True,
        )
        await memory.facts.remember(GUILD, ALICE, "alice bakes bread", requested_by=ALICE)


@pytest.fixture
def seeded(env):
    asyncio.run(_seed())
    return env


def invoke(*args: str, answer: str | None = None):
    return CliRunner().invoke(main, list(args), input=answer)


def test_migrate_creates_the_schema(env):
    result = invoke("migrate")
    assert result.exit_code == 0, result.output
    tables = {r[0] for r in sqlite3.connect(env / "cli.db").execute("select name from sqlite_master")}
    assert {"chat_history", "user_facts", "fact_revisions", "daily_summaries"} <= tables


def test_bad_setting_is_one_sentence(env, monkeypatch):
    monkeypatch.setenv("DEFAULT_TIMEZONE", "Nowhere/Land")
    result = invoke("migrate")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Setting DEFAULT_TIMEZONE is invalid: unknown time zone 'Nowhere/Land' (try e.g. Europe/Berlin)."
    )


@pytest.mark.parametrize(
    "command",
    [
        ["stats"],
        ["export", "--user", str(ALICE)],
        ["context", "--user", str(ALICE)],
        ["recall", "bread"],
        ["purge", "--all"],
        ["purge", "--all", "--yes"],
    ],
)
def test_a_guild_nothing_is_stored_for_is_one_sentence_naming_the_known_ones(seeded, command):
    result = invoke(command[0], "--guild", str(OTHER_GUILD), *command[1:])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"Nothing is stored for guild {OTHER_GUILD} in this database; it knows guild {GUILD}.\n"


def test_an_empty_database_says_so(env):
    result = invoke("stats", "--guild", str(GUILD))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Nothing is stored for guild {GUILD}: this database holds no guild yet (run the bot or "
        "`python -m bot import` first, or check DATABASE_URL).\n"
    )


def test_stats_of_a_known_guild(seeded):
    result = invoke("stats", "--guild", str(GUILD))
    assert result.exit_code == 0, result.output
    assert "messages                 3\n" in result.stdout
    assert "members with facts       1\n" in result.stdout


def stored_messages(env) -> int:
    return sqlite3.connect(env / "cli.db").execute("select count(*) from chat_history").fetchone()[0]


@pytest.mark.parametrize(
    ("option", "target", "rows"),
    [
        (
            ["--user", str(ALICE)],
            f"everything about member {ALICE} (alice)",
            "2 messages, 1 facts entries, 1 fact revisions, 1 names, 1 revisions no longer attributed, "
            "1 mentions in others' messages",
        ),
        (["--channel", str(OTHER_CHANNEL)], f"the messages of channel {OTHER_CHANNEL}", "1 messages"),
        (["--before", "2026-11-21T00:00+01:00"], "the messages before 2026-11-20 23:00 UTC", "2 messages"),
        (
            ["--all"],
            "everything the guild said (its channel rules, opt-outs and time zone stay)",
            "3 messages, 1 facts entries, 1 fact revisions, 2 names, 1 usage records",
        ),
    ],
)
def test_the_purge_question_counts_what_goes_and_the_purge_deletes_exactly_that(seeded, option, target, rows):
    question = f"From guild {GUILD}, delete {target}: {rows}? This cannot be undone [y/N]: "
    declined = invoke("purge", "--guild", str(GUILD), *option, answer="n\n")
    assert declined.exit_code == 1
    assert declined.stdout == question + "n\n"
    assert stored_messages(seeded) == 3  # asking changed nothing
    accepted = invoke("purge", "--guild", str(GUILD), *option, answer="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert accepted.stdout == question + f"y\nDeleted: {rows}.\n"


def test_a_purge_that_matches_nothing_does_not_ask(seeded):
    result = invoke("purge", "--guild", str(GUILD), "--channel", "12345")
    assert result.exit_code == 0
    assert result.stdout == f"Nothing to delete: guild {GUILD} keeps nothing of the messages of channel 12345.\n"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("2026-11-22", datetime(2026, 11, 22, tzinfo=UTC)),
        ("2026-11-22 12:00", datetime(2026, 11, 22, 12, tzinfo=UTC)),
        ("2026-11-22T12:00", datetime(2026, 11, 22, 12, tzinfo=UTC)),
        ("2026-11-22 12:00:30", datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC)),
        ("2026-11-22T12:00:30+01:00", datetime(2026, 11, 22, 12, 0, 30, tzinfo=timezone(timedelta(hours=1)))),
        ("2026-11-22 12:00-05:00", datetime(2026, 11, 22, 12, tzinfo=timezone(timedelta(hours=-5)))),
        ("2026-11-22T11:00Z", datetime(2026, 11, 22, 11, tzinfo=UTC)),
    ],
)
def test_dates_as_people_type_them(typed, meant):
    moment = IsoDateTime().convert(typed, None, None)
    assert moment == meant and moment.utcoffset() == meant.utcoffset()


@pytest.mark.parametrize("typed", ["22.11.2026", "2026-13-01", "tomorrow", "2026-11-22 25:00", ""])
def test_a_date_that_is_not_one_is_a_friendly_sentence(typed):
    with pytest.raises(click.BadParameter) as err:
        IsoDateTime().convert(typed, None, None)
    assert err.value.message == (
        f"{typed!r} is not a date and time; write it like 2026-11-22, 2026-11-22 12:00 or 2026-11-22T12:00:30+01:00."
    )


@pytest.mark.parametrize("command", [["context", "--user", "1", "--at"], ["purge", "--all", "--before"]])
def test_a_wrong_date_on_the_command_line_ends_with_that_sentence(env, command):
    result = invoke(command[0], "--guild", "1", *command[1:], "2026-11-22 noon")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '{command[-1]}': '2026-11-22 noon' is not a date and time; write it like "
        "2026-11-22, 2026-11-22 12:00 or 2026-11-22T12:00:30+01:00."
    )
    assert not (env / "cli.db").exists()  # refused before anything was opened


def test_context_takes_a_time_with_a_space(seeded):
    result = invoke("context", "--guild", str(GUILD), "--user", str(ALICE), "--at", "2026-11-20 18:00")
    assert result.exit_code == 0, result.output
    assert "alice bakes bread" in result.stdout


def test_embed_then_recall_through_the_vectors(seeded):
    before = invoke("recall", "--guild", str(GUILD), "what does alice bake?")
    assert before.exit_code == 0, before.output
    assert "3 stored messages are not embedded yet" in before.stderr
    embedded = invoke("embed")
    assert embedded.exit_code == 0, embedded.output
    assert embedded.stdout == "Embedded 3 messages.\n"
    after = invoke("recall", "--guild", str(GUILD), "what does alice bake?")
    assert after.exit_code == 0, after.output
    assert "I bake bread on Sundays" in after.stdout and after.stderr == ""


def test_ctrl_c_at_the_purge_question_deletes_nothing(seeded):
    """The question is asked between two runs of the event loop: SIGINT there is a plain abort."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "purge", "--guild", str(GUILD), "--all"],
        stdin=subprocess.PIPE,  # kept open: the question waits for an answer
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=die_with_parent,  # noqa: PLW1509 - see tests/children.py
        cwd=seeded,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    asked = b""
    while not asked.endswith(b"[y/N]: "):
        chunk = process.stdout.read1(1024)
        assert chunk, asked
        asked += chunk
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert err.decode().strip() == "Aborted!"
    assert stored_messages(seeded) == 3
