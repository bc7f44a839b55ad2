"""`python -m bot run` with LLM_PROVIDER=openai looks at the endpoint once, by the Gemini probe's rule: a refused key
or a server without structured output is one sentence and exit code 1; an endpoint that does not answer or a model
it does not serve is one warning each, and the bot starts (here: the console, which ends at once on an empty stdin).
The cases that need no process of their own call `check_endpoint` as `run` does.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.llm.openai_probe import check_endpoint
from bot.settings import ConfigError, Settings
from fakes.replies import hang
from tests.llm.test_lanes import closed_port
from tests.llm.test_probe import CONSOLE, run_bot

ENDPOINT = {"LLM_PROVIDER": "openai", "OPENAI_MODEL_FAST": "qwen3:8b", "EMBEDDING_MODEL": "none"}


async def run_against(tmp_path: Path, base_url: str, **env: str) -> tuple[int, list[str]]:
    return await run_bot(tmp_path, **{**ENDPOINT, "OPENAI_BASE_URL": base_url, **env})


async def check(base_url: str, caplog: pytest.LogCaptureFixture, **values: object) -> list[str]:
    """`check_endpoint` as `run` calls it; the warnings it logged."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        llm_provider="openai",
        openai_base_url=base_url,
        openai_model_fast="qwen3:8b",
        embedding_model="none",
        **values,
    )
    caplog.set_level(logging.INFO, logger="bot.llm")
    await check_endpoint(settings)
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_refused_key_is_one_sentence(tmp_path, openai_stub):
    openai_stub.keys = {"sk-right"}
    code, stderr = await run_against(tmp_path, openai_stub.base_url, OPENAI_API_KEY="sk-wrong")
    assert code == 1
    assert stderr == [
        f"The endpoint at OPENAI_BASE_URL ({openai_stub.base_url}) refused OPENAI_API_KEY (401 Incorrect API key "
        "provided.): set the key the server expects, or leave OPENAI_API_KEY empty for a local server that needs none."
    ]


async def test_a_server_that_needs_a_key_says_so_when_none_is_set(openai_stub, caplog):
    openai_stub.keys = {"sk-right"}
    with pytest.raises(ConfigError) as raised:
        await check(openai_stub.base_url, caplog)
    assert str(raised.value) == (
        f"The endpoint at OPENAI_BASE_URL ({openai_stub.base_url}) needs a key (401 Incorrect API key provided.): "
        "set OPENAI_API_KEY."
    )


async def test_a_server_without_structured_output_is_one_sentence(tmp_path, openai_stub):
    openai_stub.formats = frozenset()
    code, stderr = await run_against(tmp_path, openai_stub.base_url)
    assert code == 1
    assert stderr == [
        f"The endpoint at OPENAI_BASE_URL ({openai_stub.base_url}) takes neither a JSON schema nor JSON mode for "
        "OPENAI_MODEL_FAST=qwen3:8b (400 response_format type 'json_object' is not supported): Elefant needs "
        "structured output to route messages, forget and summarise; serve the model with Ollama, llama.cpp's server "
        "or vLLM, or choose another."
    ]


async def test_json_mode_alone_is_enough_and_a_served_model_starts_quietly(openai_stub, caplog):
    openai_stub.formats = frozenset({"json_object"})
    openai_stub.models = {"qwen3:8b", "qwen3:32b"}
    assert await check(openai_stub.base_url, caplog, openai_model_batch="qwen3:32b") == []
    assert sorted(r.model for r in openai_stub.requests) == ["qwen3:32b", "qwen3:8b"]  # one question each ...
    assert all(r.format_type == "json_object" for r in openai_stub.requests)  # ... in JSON mode after the refusal
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert "OPENAI_MODEL_FAST=qwen3:8b takes JSON mode but not a JSON schema" in " ".join(infos)


async def test_a_model_the_server_does_not_serve_is_one_warning_naming_the_setting(tmp_path, openai_stub):
    openai_stub.models = {"llama3.2:3b", "qwen3:8b"}
    code, stderr = await run_against(tmp_path, openai_stub.base_url, OPENAI_MODEL_BATCH="qwen3:32b")
    assert code == 0
    [warning, console] = stderr
    assert console == CONSOLE
    assert warning.endswith(
        f"WARNING bot.llm.openai_probe: OPENAI_MODEL_BATCH=qwen3:32b is not served by the endpoint at OPENAI_BASE_URL "
        f'({openai_stub.base_url}) (404 model "qwen3:32b" not found, try pulling it first; it serves llama3.2:3b, '
        "qwen3:8b): pull or choose a model it serves; offline answers stand in for it meanwhile"
    )


async def test_a_server_that_ignores_model_names_passes(openai_stub, caplog):
    """llama.cpp's server lists the file it loaded and answers whatever model is named: no warning."""
    openai_stub.models = None  # lists only "stub-model", serves any name
    assert await check(openai_stub.base_url, caplog) == [] and openai_stub.listed == 1
    assert [r.format_type for r in openai_stub.requests] == ["json_schema"]


async def test_an_unreachable_endpoint_warns_once_and_starts(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, stderr = await run_against(tmp_path, url)
    assert code == 0 and stderr[-1] == CONSOLE
    [warning] = stderr[:-1]
    assert f"WARNING bot.llm.openai_probe: the endpoint at OPENAI_BASE_URL ({url}) is unreachable (ConnectError" in (
        warning
    )
    assert warning.endswith("); answers come from memory until it responds")


async def test_a_password_in_the_base_url_is_not_shown(openai_stub, caplog):
    openai_stub.keys = {"sk-right"}
    with pytest.raises(ConfigError) as raised:
        await check(openai_stub.base_url.replace("http://", "http://ana:s3cret@"), caplog)
    assert "s3cret" not in str(raised.value) and openai_stub.base_url in str(raised.value)


async def test_a_model_that_does_not_answer_its_first_question_warns_and_starts(openai_stub, caplog):
    openai_stub.responder = lambda request: hang(60)
    [warning] = await check(openai_stub.base_url, caplog, llm_timeout_seconds=0.5)
    assert warning == (
        f"OPENAI_MODEL_FAST=qwen3:8b did not answer a first question at {openai_stub.base_url} (no answer within "
        "0.5 s); starting anyway"
    )
