"""A local HTTP server that speaks enough of the Gemini REST API for the real google-genai client.

Scriptable per test: queue canned replies (text, JSON, 429 with a retry delay, 500, a hang), or set a
responder function that computes the reply from the request; every request is recorded. Also used by
benchmarks, with a fixed artificial latency.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from fakes.replies import Reply, as_json, error, hang, text

__all__ = ["GeminiStub", "Reply", "StubRequest", "as_json", "error", "hang", "text"]

_PATH = re.compile(r"^/(?P<version>v1\w*)/models/(?P<model>[^/:]+):generateContent$")
_EMBED = re.compile(r"^/(?P<version>v1\w*)/models/(?P<model>[^/:]+):batchEmbedContents$")
_MODEL = re.compile(r"^/(?P<version>v1\w*)/models/(?P<model>[^/:]+)$")


@dataclass
class StubRequest:
    """One generateContent call as the stub saw it."""

    model: str
    body: dict[str, Any]
    api_key: str | None
    proxy_authorization: str | None = None  # the stub standing in for a proxy

    @property
    def prompt_text(self) -> str:
        """All text parts of the request (system instruction and contents)."""
        parts = [p.get("text", "") for c in self.body.get("contents", []) for p in c.get("parts", [])]
        system = self.body.get("systemInstruction") or self.body.get("system_instruction") or {}
        parts += [p.get("text", "") for p in system.get("parts", [])]
        return "\n".join(parts)

    @property
    def config(self) -> dict[str, Any]:
        """The generationConfig sent."""
        return self.body.get("generationConfig", {})


@dataclass
class GeminiStub:
    """The server; start with `await stub.start()`, point the client at `stub.base_url`."""

    latency: float = 0.0
    replies: deque[Reply] = field(default_factory=deque)
    responder: Callable[[StubRequest], Reply] | None = None
    requests: list[StubRequest] = field(default_factory=list)
    embedder: Callable[[str], list[float]] | None = None  # text -> vector, for batchEmbedContents
    embedded: list[list[str]] = field(default_factory=list)  # the texts of each embedding request
    embed_replies: deque[Reply] = field(default_factory=deque)  # errors (or delays) for the next embeddings
    models: set[str] | None = None  # the models Google serves (None: any); others answer 404 as Google does
    keys: set[str] | None = None  # the API keys Google accepts (None: any); others answer 400 API_KEY_INVALID
    _runner: web.AppRunner | None = None
    base_url: str = ""

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order."""
        self.replies.extend(replies)

    async def start(self) -> GeminiStub:
        """Listen on an ephemeral port on 127.0.0.1."""
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        app.router.add_get("/{tail:.*}", self._model_info)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)  # hung replies must not block
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        """Shut the server down."""
        if self._runner is not None:
            await self._runner.cleanup()

    def _refusal(self, request: web.Request, model: str) -> web.Response | None:
        """What Google answers a wrong key or an unknown model (status, google.rpc status and message)."""
        if self.keys is not None and request.headers.get("x-goog-api-key") not in self.keys:
            body = {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            }
            return web.json_response({"error": body}, status=400)
        if self.models is not None and model not in self.models:
            message = f"models/{model} is not found for API version v1beta, or is not supported for generateContent."
            return web.json_response({"error": {"code": 404, "message": message, "status": "NOT_FOUND"}}, status=404)
        return None

    async def _model_info(self, request: web.Request) -> web.Response:
        match = _MODEL.match(request.path)
        if match is None:
            return web.json_response({"error": {"code": 404, "message": "not found"}}, status=404)
        refusal = self._refusal(request, match["model"])
        return refusal or web.json_response({"name": f"models/{match['model']}", "displayName": match["model"]})

    async def _handle(self, request: web.Request) -> web.Response:
        if _EMBED.match(request.path) and self.embedder is not None:
            body = await request.json()
            texts = ["".join(p.get("text", "") for p in r["content"]["parts"]) for r in body["requests"]]
            self.embedded.append(texts)
            scripted = self.embed_replies.popleft() if self.embed_replies else Reply()
            await asyncio.sleep(self.latency + scripted.delay)
            if scripted.status != 200:
                return web.json_response(_error_body(scripted), status=scripted.status)
            return web.json_response({"embeddings": [{"values": self.embedder(t)} for t in texts]})
        match = _PATH.match(request.path)
        if match is None:
            return web.json_response({"error": {"code": 404, "message": "not found"}}, status=404)
        if refusal := self._refusal(request, match["model"]):
            return refusal
        seen = StubRequest(
            match["model"],
            await request.json(),
            request.headers.get("x-goog-api-key"),
            request.headers.get("Proxy-Authorization"),
        )
        self.requests.append(seen)
        if self.replies:
            reply = self.replies.popleft()
        elif self.responder is not None:
            reply = self.responder(seen)
        else:
            reply = text("stub answer")
        await asyncio.sleep(self.latency + reply.delay)
        if reply.status != 200:
            return web.json_response(_error_body(reply), status=reply.status)
        return web.json_response(_success_body(reply, seen.model))


def _success_body(reply: Reply, model: str) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": reply.text}]}, "index": 0}
    candidate["finishReason"] = "SAFETY" if reply.blocked else "STOP"
    if reply.blocked:
        candidate["content"] = {"role": "model", "parts": []}
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": reply.tokens_in,
            "candidatesTokenCount": reply.tokens_out,
            "totalTokenCount": reply.tokens_in + reply.tokens_out + reply.thoughts,
            **({"thoughtsTokenCount": reply.thoughts} if reply.thoughts else {}),
        },
        "modelVersion": model,
    }


def _error_body(reply: Reply) -> dict[str, Any]:
    status = {
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
        400: "INVALID_ARGUMENT",
        404: "NOT_FOUND",
    }
    body: dict[str, Any] = {"code": reply.status, "message": "stub error", "status": status.get(reply.status, "")}
    if reply.retry_delay:
        body["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": reply.retry_delay}]
    return {"error": body}
