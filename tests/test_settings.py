"""Settings: defaults, .env, and one clear sentence per wrong value."""

from __future__ import annotations

import pytest

from bot.settings import DEFAULT_DATABASE_URL, ConfigError, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("DATABASE_URL", "DEFAULT_TIMEZONE", "DISCORD_TOKEN", "GEMINI_API_KEY", "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)


def test_defaults_use_a_sqlite_file_under_data():
    settings = load_settings()
    assert settings.database_url == DEFAULT_DATABASE_URL
    assert settings.database_url.startswith("sqlite+aiosqlite:///") and "/data/" in settings.database_url
    assert settings.discord_token is None and settings.default_timezone == "UTC"


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
