"""A local HTTP server that speaks enough of the OpenAI chat-completions API for the real `openai` client, as
Ollama, llama.cpp's server and vLLM serve it under `/v1`.

Scriptable like the Gemini stub (fakes/gemini_stub.py), with the same `Reply` and the same scripted model: queue
canned replies or set a responder; every request is recorded. It also plays what servers differ in: the
`response_format` types they take (`formats`), where a thinking model puts its thoughts (`reasoning`), keys,
served models, token counts or none.

Run it for a console session against it (the scripted model answers):
    python -m fakes.openai_stub --port 8808
    LLM_PROVIDER=openai OPENAI_BASE_URL=http://127.0.0.1:8808/v1 OPENAI_MODEL_FAST=stub-model make run
With `--answering` it answers chat with a line of what it was given (`answering_model`), for `python -m bench.answers`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from fakes.replies import Reply, text

Reasoning = Literal["none", "reasoning_content", "reasoning", "think"]
THOUGHT = "The member asked something; let me think about what the instructions want before answering."


@dataclass
class ChatRequest:
    """One chat-completions call as the stub saw it."""

    model: str
    body: dict[str, Any]
    api_key: str | None

    @property
    def prompt_text(self) -> str:
        """Every message's text, in order (the instructions, then the data)."""
        return "\n".join(str(m.get("content") or "") for m in self.body.get("messages", []))

    @property
    def format_type(self) -> str | None:
        """The `response_format` type asked for (json_schema, json_object), or None."""
        return (self.body.get("response_format") or {}).get("type")


@dataclass
class OpenAIStub:
    """The server; start with `await stub.start()`, point the client at `stub.base_url` (which ends in /v1)."""

    latency: float = 0.0
    replies: deque[Reply] = field(default_factory=deque)
    responder: Callable[[ChatRequest], Reply] | None = None
    requests: list[ChatRequest] = field(default_factory=list)
    models: set[str] | None = None  # the models it serves (None: any); others answer 404 as Ollama does
    keys: set[str] | None = None  # the bearer keys it accepts (None: any); others answer 401
    formats: frozenset[str] = frozenset({"json_schema", "json_object"})  # response_format types it takes
    reasoning: Reasoning = "none"  # where a thinking model's thoughts go: a field, `<think>` text, nowhere
    counts_tokens: bool = True  # False: no `usage` in replies (some servers do not count)
    listed: int = 0  # GET /v1/models requests
    _runner: web.AppRunner | None = None
    base_url: str = ""

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order."""
        self.replies.extend(replies)

    async def start(self, port: int = 0) -> OpenAIStub:
        """Listen on 127.0.0.1 (an ephemeral port unless given)."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)  # hung replies must not block
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{bound}/v1"
        return self

    async def stop(self) -> None:
        """Shut the server down."""
        if self._runner is not None:
            await self._runner.cleanup()

    def _refusal(self, request: web.Request, model: str | None) -> web.Response | None:
        """What a server answers a wrong key or a model it does not serve."""
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.keys is not None and key not in self.keys:
            body = {"message": "Incorrect API key provided.", "type": "invalid_request_error"}
            body["code"] = "invalid_api_key"
            return web.json_response({"error": body}, status=401)
        if model is not None and self.models is not None and model not in self.models:
            message = f'model "{model}" not found, try pulling it first'
            return web.json_response({"error": {"message": message, "type": "api_error"}}, status=404)
        return None

    async def _models(self, request: web.Request) -> web.Response:
        self.listed += 1
        if refusal := self._refusal(request, None):
            return refusal
        served = sorted(self.models) if self.models is not None else ["stub-model"]
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "stub"} for m in served]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        if refusal := self._refusal(request, body.get("model")):
            return refusal
        seen = ChatRequest(body.get("model", ""), body, request.headers.get("Authorization"))
        if body.get("stream"):
            return _invalid("the stub does not stream", "stream")
        if seen.format_type is not None and seen.format_type not in self.formats:
            return _invalid(f"response_format type '{seen.format_type}' is not supported", "response_format")
        self.requests.append(seen)
        if self.replies:
            reply = self.replies.popleft()
        elif self.responder is not None:
            reply = self.responder(seen)
        else:
            reply = text("stub answer")
        await asyncio.sleep(self.latency + reply.delay)
        if reply.status != 200:
            kind = "server_error" if reply.status >= 500 else "invalid_request_error"
            error = {"message": "stub error", "type": kind}
            return web.json_response({"error": error}, status=reply.status, headers=reply.headers)
        return web.json_response(self._completion(reply, seen.model), headers=reply.headers)

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        thought = reply.reasoning or (THOUGHT if self.reasoning != "none" else "")
        if thought and self.reasoning == "think":
            message["content"] = f"<think>\n{thought}\n</think>\n\n{reply.text}"
        elif thought:
            message["reasoning_content" if self.reasoning == "none" else self.reasoning] = thought
        if reply.blocked:
            message["content"] = None
        completion: dict[str, Any] = {
            "id": f"chatcmpl-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "content_filter" if reply.blocked else "stop"}
            ],
        }
        if self.counts_tokens:
            completion["usage"] = {
                "prompt_tokens": reply.tokens_in,
                "completion_tokens": reply.tokens_out + reply.thoughts,
                "total_tokens": reply.tokens_in + reply.tokens_out + reply.thoughts,
                "completion_tokens_details": {"reasoning_tokens": reply.thoughts},
            }
        return completion


def _invalid(message: str, param: str) -> web.Response:
    body = {"message": message, "type": "invalid_request_error", "param": param}
    return web.json_response({"error": body}, status=400)


async def _serve(port: int, models: list[str], reasoning: Reasoning, *, answering: bool = False) -> None:
    from fakes.model_doubles import answering_model, scripted_model

    responder = answering_model if answering else scripted_model
    stub = await OpenAIStub(responder=responder, models=set(models), reasoning=reasoning).start(port)
    which = "the answering model" if answering else "the scripted model"
    print(  # noqa: T201 - the one thing this command says
        f"OpenAI-compatible stub ({which}) on {stub.base_url}, serving {', '.join(models)}; try:\n"
        f"  LLM_PROVIDER=openai OPENAI_BASE_URL={stub.base_url} OPENAI_MODEL_FAST={models[0]} make run",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await stub.stop()


def main() -> None:
    """`python -m fakes.openai_stub`: serve the scripted model until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8808)
    parser.add_argument("--model", action="append", help="a model it serves (repeatable; default stub-model)")
    parser.add_argument("--reasoning", choices=["none", "reasoning_content", "reasoning", "think"], default="none")
    parser.add_argument(
        "--answering", action="store_true", help="chat answers with the recalled line closest to the question"
    )
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port, args.model or ["stub-model"], args.reasoning, answering=args.answering))


if __name__ == "__main__":
    main()
