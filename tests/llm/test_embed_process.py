"""Documents embedded in a niced child process: the same vectors, the lowest CPU priority, and a child that dies
is started again at the next batch."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from bot.llm.embed_process import NICE, EncoderProcess
from bot.llm.local_embedder import LocalEmbedder, installed, load_minilm

pytestmark = pytest.mark.skipif(not installed(), reason="the offline embedding model package is not installed")
HANG_GUARD = 120.0  # the child imports and loads the model at nice 19 on a busy machine
TEXTS = ["what did Ana say about the trip to Lisbon last month?", "ok", "émoji 🎉 and ünïcödé"]


async def test_the_child_gives_the_models_vectors_at_the_lowest_priority_and_comes_back_after_a_kill() -> None:
    model = load_minilm()
    assert model is not None
    encoder = EncoderProcess()
    try:
        async with asyncio.timeout(HANG_GUARD):
            got = await encoder.encode(TEXTS)
            np.testing.assert_allclose(got, model.encode(TEXTS), atol=1e-6)
            process = encoder._process
            assert process is not None and process.pid is not None
            assert os.getpriority(os.PRIO_PROCESS, process.pid) == NICE
            process.kill()
            process.wait()
            again = await encoder.encode(TEXTS)
            np.testing.assert_allclose(again, got, atol=1e-6)
            assert encoder._process is not process
    finally:
        encoder.close()
    assert process.poll() is not None


async def test_the_bots_embedder_sends_documents_to_the_child_and_encodes_questions_itself() -> None:
    embedder = LocalEmbedder(process=True)
    try:
        async with asyncio.timeout(HANG_GUARD):
            assert await embedder.loaded()
            documents = await embedder.embed_array(TEXTS)
            questions = await embedder.embed_array(TEXTS, task="RETRIEVAL_QUERY")
        np.testing.assert_allclose(documents, questions, atol=1e-6)
        assert embedder._documents is not None and embedder._documents._process is not None
        child = embedder._documents._process
    finally:
        embedder.close()
    child.wait(10)
    assert child.poll() is not None


async def test_the_child_is_in_a_session_of_its_own_so_a_terminals_ctrl_c_never_reaches_it() -> None:
    """Ctrl-C at the console's terminal goes to the terminal's process group; a child in that group, still
    starting, printed a KeyboardInterrupt traceback (tests/test_stops.py saw it in 1 of 2 runs)."""
    encoder = EncoderProcess()
    try:
        async with asyncio.timeout(HANG_GUARD):
            await encoder.encode(TEXTS[:1])
            process = encoder._process
            assert process is not None
            assert os.getsid(process.pid) == process.pid != os.getsid(0)
    finally:
        encoder.close()
