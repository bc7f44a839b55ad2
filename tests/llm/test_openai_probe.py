"""`python -m bot run` with LLM_PROVIDER=openai looks at the endpoint once, by the Gemini probe's rule: a refused key
or a server without structured output is one sentence and exit code 1; an endpoint that does not answer or a model
it does not serve is one warning each, and the bot starts (here: the console, which ends at once on an empty stdin).
"""

from __future__ import annotations

from pathlib import Path

from fakes.openai_stub import OpenAIStub
from tests.llm.test_lanes import closed_port
from tests.llm.test_probe import CONSOLE, run_bot

ENDPOINT = {"LLM_PROVIDER": "openai", "OPENAI_MODEL_FAST": "qwen3:8b", "EMBEDDING_MODEL": "none"}


async def run_against(tmp_path: Path, base_url: str, **env: str) -> tuple[int, list[str]]:
    return await run_bot(tmp_path, **{**ENDPOINT, "OPENAI_BASE_URL": base_url, **env})


async def test_a_refused_key_is_one_sentence(tmp_path, openai_stub):
    openai_stub.keys = {"sk-right"}
    code, stderr = await run_against(tmp_path, openai_stub.base_url, OPENAI_API_KEY="sk-wrong")
    assert code == 1
    assert stderr == [
        f"The endpoint at OPENAI_BASE_URL ({openai_stub.base_url}) refused OPENAI_API_KEY (401 Incorrect API key "
        "provided.): set the key the server expects, or leave OPENAI_API_KEY empty for a local server that needs none."
    ]


async def test_a_server_that_needs_a_key_says_so_when_none_is_set(tmp_path, openai_stub):
    openai_stub.keys = {"sk-right"}
    code, stderr = await run_against(tmp_path, openai_stub.base_url)
    assert code == 1
    assert stderr == [
        f"The endpoint at OPENAI_BASE_URL ({openai_stub.base_url}) needs a key (401 Incorrect API key provided.): "
        "set OPENAI_API_KEY."
    ]


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


async def test_json_mode_alone_is_enough_and_a_served_model_starts_quietly(tmp_path, openai_stub):
    openai_stub.formats = frozenset({"json_object"})
    openai_stub.models = {"qwen3:8b", "qwen3:32b"}
    code, stderr = await run_against(tmp_path, openai_stub.base_url, OPENAI_MODEL_BATCH="qwen3:32b")
    assert code == 0 and stderr == [CONSOLE]
    assert sorted(r.model for r in openai_stub.requests) == ["qwen3:32b", "qwen3:8b"]  # one question each ...
    assert all(r.format_type == "json_object" for r in openai_stub.requests)  # ... in JSON mode after the refusal


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


async def test_a_server_that_ignores_model_names_passes(tmp_path, openai_stub):
    """llama.cpp's server lists the file it loaded and answers whatever model is named: no warning."""
    openai_stub.models = None  # lists only "stub-model", serves any name
    code, stderr = await run_against(tmp_path, openai_stub.base_url)
    assert code == 0 and stderr == [CONSOLE] and openai_stub.listed == 1


async def test_an_unreachable_endpoint_warns_once_and_starts(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, stderr = await run_against(tmp_path, url)
    assert code == 0 and stderr[-1] == CONSOLE
    [warning] = stderr[:-1]
    assert (
        f"WARNING bot.llm.openai_probe: the endpoint at OPENAI_BASE_URL ({url}) is unreachable (ConnectError" in warning
    )
    assert warning.endswith("); answers come from memory until it responds")


async def test_a_password_in_the_base_url_is_not_shown(tmp_path, openai_stub):
    openai_stub.keys = {"sk-right"}
    url = openai_stub.base_url.replace("http://", "http://ana:s3cret@")
    code, stderr = await run_against(tmp_path, url)
    assert code == 1 and "s3cret" not in "".join(stderr) and openai_stub.base_url in stderr[0]


async def test_a_stub_that_hangs_the_first_question_warns_and_starts(tmp_path):
    stub = await OpenAIStub().start()
    from fakes.replies import hang

    stub.responder = lambda request: hang(60)
    try:
        code, stderr = await run_against(tmp_path, stub.base_url, LLM_TIMEOUT_SECONDS="0.5")
    finally:
        await stub.stop()
    assert code == 0 and stderr[-1] == CONSOLE
    [warning] = stderr[:-1]
    assert warning.endswith(
        f"OPENAI_MODEL_FAST=qwen3:8b did not answer a first question at {stub.base_url} (no answer within 0.5 s); "
        "starting anyway"
    )
