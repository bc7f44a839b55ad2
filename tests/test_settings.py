"""Settings: defaults, .env, and one clear sentence per wrong value (also through the real `python -m bot`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.settings import ConfigError, Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in (
        "DATABASE_URL",
        "DATA_DIR",
        "DEFAULT_TIMEZONE",
        "DISCORD_TOKEN",
        "GEMINI_API_KEY",
        "LOG_LEVEL",
        "LLM_PROVIDER",
    ):
        monkeypatch.delenv(name, raising=False)


def test_defaults_use_a_sqlite_file_in_data_dir_where_the_bot_starts(tmp_path):
    settings = load_settings()
    assert settings.data_dir == tmp_path / "data"
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path / 'data' / 'elefant.db'}"
    assert settings.discord_token is None and settings.default_timezone == "UTC"


def test_data_dir_holds_the_default_database(monkeypatch, tmp_path):
    monkeypatch.setenv("DATA_DIR", "state")  # relative: to the directory the bot starts in, made absolute then
    settings = load_settings()
    assert settings.data_dir == tmp_path / "state"
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path / 'state' / 'elefant.db'}"
    monkeypatch.setenv("DATABASE_URL", "sqlite:///elsewhere.db")  # a URL given wins
    assert load_settings().database_url == "sqlite+aiosqlite:///elsewhere.db"


def test_dotenv_is_read_and_secrets_are_hidden(tmp_path):
    (tmp_path / ".env").write_text("DISCORD_TOKEN=abc.def\nDEFAULT_TIMEZONE=Europe/Berlin\n")
    settings = load_settings()
    assert settings.discord_token is not None and settings.discord_token.get_secret_value() == "abc.def"
    assert "abc.def" not in repr(settings)
    assert settings.default_timezone == "Europe/Berlin"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@db:5432/elefant", "postgresql+asyncpg://u:p@db:5432/elefant"),
        ("postgres://db/elefant", "postgresql+asyncpg://db/elefant"),
        ("sqlite:///data/x.db", "sqlite+aiosqlite:///data/x.db"),
    ],
)
def test_plain_urls_get_the_async_driver(monkeypatch, given, expected):
    monkeypatch.setenv("DATABASE_URL", given)
    assert load_settings().database_url == expected


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("DATABASE_URL", "not a url", "DATABASE_URL"),
        ("DATABASE_URL", "mysql://x/y", "unsupported database"),
        ("DEFAULT_TIMEZONE", "Mars/Olympus", "unknown time zone"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL"),
        ("FACTS_MAX_CHARS", "ten", "FACTS_MAX_CHARS"),
    ],
)
def test_a_wrong_value_stops_with_one_sentence_naming_the_setting(monkeypatch, name, value, words):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    text = str(err.value)
    assert text.startswith(f"Setting {name} is invalid:") and words in text
    assert "\n" not in text


def _start(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m bot run` as people start it, with nothing on stdin (the console would end at once)."""
    base = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "DATABASE_URL"}}
    return subprocess.run(
        [sys.executable, "-m", "bot", "run"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**base, "DATABASE_URL": f"sqlite:///{tmp_path}/ok.db", **env, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("LLM_TIMEOUT_SECONDS", "inf", "finite"),
        ("LLM_TIMEOUT_SECONDS", "nan", "finite"),
        ("LLM_TIMEOUT_SECONDS", "1e308", "less than or equal to 600"),
        ("MEMORY_WAIT_SECONDS", "-inf", "finite"),
        ("LLM_BREAKER_COOLDOWN_SECONDS", "-5", "greater than 0"),
        ("RETENTION_DAYS", "999999999999", "less than or equal to 36500"),
        ("INGEST_SHUTDOWN_SECONDS", "inf", "finite"),
        ("DATABASE_URL", "sqlite:///:memory:", "in-memory SQLite database cannot be used"),
        ("DATABASE_URL", "sqlite://", "in-memory SQLite database cannot be used"),
        ("DATABASE_URL", "sqlite:///{file}/x.db", "is a file, not a directory"),
        ("DATABASE_URL", "sqlite:///{dir}", "is a directory"),
        ("DATA_DIR", "{file}", "is a file; give a directory"),
        ("DATA_DIR", "{file}/data", "cannot be created"),
    ],
)
def test_a_value_that_cannot_work_is_refused_at_start_in_one_line(tmp_path, name, value, words):
    regular = tmp_path / "a-file"
    regular.write_text("not a directory")
    result = _start(tmp_path, **{name: value.format(file=regular, dir=tmp_path)})
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Setting {name} is invalid:") and words in lines[0]
    assert not (tmp_path / "ok.db").exists()  # refused before anything was opened


def test_a_database_that_cannot_be_reached_is_one_line_too(tmp_path):
    result = _start(tmp_path, DATABASE_URL="postgresql://elefant:secret@127.0.0.1:1/elefant")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("The database in DATABASE_URL (postgresql+asyncpg://elefant:***@127.0.0.1:1/elefant)")
    assert "secret" not in result.stderr


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"LLM_PROVIDER": "openai"}, "LLM_PROVIDER=openai needs OPENAI_MODEL_FAST"),
        ({"LLM_PROVIDER": "gemini"}, "LLM_PROVIDER=gemini needs GEMINI_API_KEY"),
        ({"LLM_PROVIDER": "llama"}, "Setting LLM_PROVIDER is invalid: Input should be 'gemini', 'openai' or 'offline'"),
        (
            {"LLM_PROVIDER": "openai", "OPENAI_MODEL_FAST": "qwen3:8b", "EMBEDDING_MODEL": "gemini-embedding-001"},
            "EMBEDDING_MODEL=gemini-embedding-001 is a Gemini embedding model; with LLM_PROVIDER=openai use local",
        ),
    ],
)
def test_a_provider_setting_that_cannot_work_is_one_sentence(monkeypatch, env, words):
    for name in ("OPENAI_MODEL_FAST", "OPENAI_MODEL_BATCH", "EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(raised.value).startswith(words) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("values", "provider", "models"),
    [
        ({}, "offline", {}),
        ({"gemini_api_key": "k"}, "gemini", {"batch": "gemini-3.5-flash-lite", "fast": "gemma-4-26b-a4b-it"}),
        ({"gemini_api_key": "k", "llm_provider": "offline"}, "offline", {}),
        (
            {"gemini_api_key": "k", "llm_provider": "openai", "openai_model_batch": "big"},
            "openai",
            {"batch": "big", "fast": "big"},
        ),
    ],
)
def test_unset_keeps_todays_choice_and_the_setting_overrides_it(values, provider, models):
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]
    assert settings.provider == provider and settings.role_models == models
