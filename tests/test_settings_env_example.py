"""`.env.example` documents every setting, and its defaults parse."""

from __future__ import annotations

from pathlib import Path

from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _documented() -> dict[str, str]:
    pairs = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            pairs[name] = value
    return pairs


def test_every_setting_is_documented():
    assert set(_documented()) == {name.upper() for name in Settings.model_fields}


def test_documented_defaults_load(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text((ROOT / ".env.example").read_text())
    settings = Settings()
    assert settings.discord_token is None and settings.gemini_api_key is None
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path / 'data' / 'elefant.db'}"
