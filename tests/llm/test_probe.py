"""`python -m bot run` looks at the configured models once: a refused key is one sentence and exit code 1; a
retired model id or an unreachable API is one warning each, and the bot starts anyway (it runs without a model).
Without DISCORD_TOKEN `run` starts the console, which ends at once on an empty stdin."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

from tests.children import die_with_parent

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_SETTINGS = {"DISCORD_TOKEN", "GEMINI_API_KEY", "GEMINI_BASE_URL", "LLM_PROVIDER", "OPENAI_API_KEY"}
PROVIDER_SETTINGS |= {"OPENAI_BASE_URL", "OPENAI_MODEL_BATCH", "OPENAI_MODEL_FAST", "LLM_TIMEOUT_SECONDS"}


async def run_bot(tmp_path: Path, **env: str) -> tuple[int, list[str]]:
    clean = {k: v for k, v in os.environ.items() if k not in PROVIDER_SETTINGS}
    clean.update(DATABASE_URL=f"sqlite:///{tmp_path}/bot.db", LOG_LEVEL="WARNING", PYTHONPATH=str(ROOT), **env)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "run",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent,
        cwd=tmp_path,
        env=clean,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=90)
    assert process.returncode is not None
    return process.returncode, err.decode().splitlines()


CONSOLE = "No DISCORD_TOKEN is set: starting the console instead (see .env.example to connect)."


async def test_a_refused_gemini_key_is_one_sentence(tmp_path, stub):
    stub.keys = {"the-right-key"}
    code, stderr = await run_bot(tmp_path, GEMINI_API_KEY="a-wrong-key", GEMINI_BASE_URL=stub.base_url)
    assert code == 1
    assert stderr == [
        "Google refused GEMINI_API_KEY (400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key.): "
        "create a key at https://aistudio.google.com/apikey, or leave GEMINI_API_KEY empty to run without a model."
    ]


async def test_a_retired_model_id_is_one_warning_naming_the_setting(tmp_path, stub):
    stub.models = {"gemma-4-26b-a4b-it"}  # the shipped MODEL_FAST; MODEL_BATCH is "retired" here
    code, stderr = await run_bot(tmp_path, GEMINI_API_KEY="k", GEMINI_BASE_URL=stub.base_url)
    assert code == 0
    [warning, console] = stderr
    assert console == CONSOLE
    assert warning.endswith(
        "WARNING bot.llm.probe: MODEL_BATCH=gemini-3.5-flash-lite is not served by the Gemini API (404 NOT_FOUND: "
        "models/gemini-3.5-flash-lite is not found for API version v1beta, or is not supported for "
        "generateContent.): choose a current model id (see .env.example); offline answers stand in for it meanwhile"
    )


async def test_an_unreachable_gemini_api_warns_and_starts(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, stderr = await run_bot(tmp_path, GEMINI_API_KEY="k", GEMINI_BASE_URL=f"http://127.0.0.1:{port}")
    assert code == 0 and stderr[-1] == CONSOLE
    warnings = sorted(line.split("bot.llm.probe: ", 1)[1] for line in stderr[:-1])
    assert len(warnings) == 2
    assert warnings[0].startswith("the Gemini API is unreachable for MODEL_BATCH=gemini-3.5-flash-lite (")
    assert warnings[1].startswith("the Gemini API is unreachable for MODEL_FAST=gemma-4-26b-a4b-it (")
    assert all(w.endswith("); answers come from memory until it responds") for w in warnings)
