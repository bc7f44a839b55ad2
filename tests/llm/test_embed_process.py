"""Documents embedded in a niced child process: the same vectors, the lowest CPU priority, and a child that dies
is started again at the next batch."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time

import numpy as np
import pytest

from bot.llm.embed_process import NICE, EncoderProcess
from bot.llm.local_embedder import LocalEmbedder, installed, load_minilm

pytestmark = pytest.mark.skipif(not installed(), reason="the offline embedding model package is not installed")
HANG_GUARD = 120.0  # the child imports and loads the model at nice 19 on a busy machine
# Short for a test; a child loading the model at nice 19 on a busy machine still uses CPU time within it.
HANG_SECONDS = 5.0
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


async def test_a_hung_child_is_killed_and_started_again_and_the_batch_answered_with_one_line_each_way(caplog) -> None:
    """SIGSTOP: the child neither answers nor uses CPU time. Before the watchdog the batch (and every later one)
    waited forever, without a word."""
    caplog.set_level(logging.INFO, logger="bot.llm.embed_process")
    encoder = EncoderProcess(hang_seconds=HANG_SECONDS)
    try:
        async with asyncio.timeout(HANG_GUARD):
            expected = await encoder.encode(TEXTS)
            hung = encoder._process
            assert hung is not None
            os.kill(hung.pid, signal.SIGSTOP)
            got = await encoder.encode(TEXTS)
            np.testing.assert_allclose(got, expected, atol=1e-6)
            assert hung.poll() is not None  # killed (and reaped), not left stopped
            assert encoder._process is not None and encoder._process.pid != hung.pid
            again = await encoder.encode(TEXTS[:1])  # the new child goes on answering, with no more lines
            np.testing.assert_allclose(again, expected[:1], atol=1e-6)
    finally:
        encoder.close()
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "bot.llm.embed_process"]
    assert said == [
        (
            logging.WARNING,
            f"the embedding process stopped answering (no answer and no CPU time used for "
            f"{HANG_SECONDS:g} s); restarting it",
        ),
        (logging.WARNING, "the embedding process was restarted and answers again"),
    ]


async def test_a_child_busy_with_a_long_batch_is_waited_for(caplog) -> None:
    """A batch that takes longer than hang_seconds, the child using CPU time all along: no restart, no line (at nice
    19 on a busy machine a batch of the backlog can take seconds)."""
    caplog.set_level(logging.INFO, logger="bot.llm.embed_process")
    encoder = EncoderProcess(nice=0, hang_seconds=1.0)
    texts = [f"{TEXTS[0]} ({i})" for i in range(2000)]  # ~3 s of encoding here, one text at a time
    try:
        async with asyncio.timeout(HANG_GUARD):
            await encoder.encode(TEXTS[:1])  # the model loaded
            child = encoder._process
            started = time.monotonic()
            got = await encoder.encode(texts)
            took = time.monotonic() - started
        assert got.shape == (len(texts), 384)
        assert encoder._process is child
    finally:
        encoder.close()
    assert took > 1.0  # the batch did outlast hang_seconds (else this test shows nothing)
    assert [r.getMessage() for r in caplog.records if r.name == "bot.llm.embed_process"] == []
