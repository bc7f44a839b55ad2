"""The ONNX Runtime forward pass gives the vectors the numpy reference gives (which matched sentence-transformers)."""

from __future__ import annotations

import asyncio
import os
import threading

import numpy as np
import onnx
import pytest

from bench.offline_embedders import MiniLMEmbedder
from bot.llm.local_embedder import installed, load_minilm

pytestmark = pytest.mark.skipif(not installed(), reason="the offline embedding model package is not installed")

TEXTS = [
    "what did Ana say about the trip to Lisbon last month?",
    "ok",
    "I think the new release breaks saved games; anyone else seeing crashes on load? " * 3,
    "émoji 🎉 and ünïcödé, tabs\tand\nnewlines",
    "",
]


def test_the_float_graph_matches_the_numpy_reference_one_text_at_a_time_and_in_padded_batches() -> None:
    model = load_minilm(int8=False)
    assert model is not None
    reference = MiniLMEmbedder().embed(TEXTS)
    alone = np.vstack([model.encode([t]) for t in TEXTS])
    batched = model.encode(TEXTS)  # different lengths in one batch: the padding must be masked out
    for got in (alone, batched):
        assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
        np.testing.assert_allclose(got, reference, atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # Not a constant: different texts get clearly different vectors.
    assert float(alone[0] @ alone[2]) < 0.9


def test_the_int8_graph_the_bot_runs_stays_close_to_the_reference_and_is_really_quantized() -> None:
    model = load_minilm()
    assert model is not None
    ops = {node.op_type for node in onnx.load_from_string(model._session._model_bytes).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    reference = MiniLMEmbedder().embed(TEXTS)
    alone = np.vstack([model.encode([t]) for t in TEXTS])
    batched = model.encode(TEXTS)
    np.testing.assert_allclose(batched, alone, atol=1e-6)  # a text's vector never depends on its batch-mates
    np.testing.assert_allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)
    assert np.all(np.sum(alone * reference, axis=1) >= 0.96)  # each text keeps its meaning
    # ... and what is near what stays so: every pair's similarity within 0.03 of the float model's.
    assert np.abs(alone @ alone.T - reference @ reference.T).max() <= 0.03


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="per-thread CPU priority is a Linux feature")
async def test_documents_are_embedded_at_the_lowest_cpu_priority_and_questions_are_not() -> None:
    """Background embedding must not take the CPU a reply's question encoding and SQL need."""
    from bot.llm.local_embedder import BACKGROUND_NICE, LocalEmbedder

    def nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    embedder = LocalEmbedder()
    try:
        loop = asyncio.get_running_loop()
        documents = await loop.run_in_executor(embedder._thread, nice)
        questions = await loop.run_in_executor(embedder._query_thread, nice)
    finally:
        embedder.close()
    assert documents == BACKGROUND_NICE
    assert questions == os.getpriority(os.PRIO_PROCESS, 0) < BACKGROUND_NICE


def _resident_mib() -> float:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS:")).split()[1]) / 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's resident size")
def test_a_batch_of_long_messages_leaves_no_lasting_memory_behind() -> None:
    """ONNX Runtime's default memory arena grows to the largest batch it ever ran and keeps it: a backlog batch
    of 64 long messages left the process ~900 MB bigger for good. Without the arena it is given back."""
    model = load_minilm()
    assert model is not None
    model.batch_size = 64  # the bot's graph runs one text at a time; a batch of 64 is what grew the arena
    model.encode(["warm up"])
    before = _resident_mib()
    long = [" ".join(f"word{i}x{j} and more" for j in range(80)) for i in range(64)]  # ~256 tokens each
    assert model.encode(long).shape == (64, 384)
    assert _resident_mib() - before < 300
