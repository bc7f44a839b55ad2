"""The command line: migrate, run without a token, and a bad setting."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from bot.cli import main


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/cli.db")
    return tmp_path


def test_migrate_creates_the_schema(env):
    result = CliRunner().invoke(main, ["migrate"])
    assert result.exit_code == 0, result.output
    tables = {r[0] for r in sqlite3.connect(env / "cli.db").execute("select name from sqlite_master")}
    assert {"chat_history", "user_facts", "fact_revisions", "daily_summaries"} <= tables


def test_bad_setting_is_one_sentence(env, monkeypatch):
    monkeypatch.setenv("DEFAULT_TIMEZONE", "Nowhere/Land")
    result = CliRunner().invoke(main, ["migrate"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Setting DEFAULT_TIMEZONE is invalid: unknown time zone 'Nowhere/Land' (try e.g. Europe/Berlin)."
    )
