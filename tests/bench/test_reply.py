"""The reply benchmark at a small size: every route is answered on its own path (the benchmark checks each
answer's route, that it came from memory and not a fallback, and that it carried the asker's context); latency
is not checked here (these machines are too noisy for absolute times)."""

from __future__ import annotations

import argparse

import pytest

from bench.reply import ROUTES, measure


@pytest.mark.slow
async def test_the_reply_benchmark_times_each_route_on_its_own_path(tmp_path, capsys):
    await measure(argparse.Namespace(messages=3000, runs=1, questions=3, ingest=20.0, seed=7), tmp_path)
    table = capsys.readouterr().out
    for route in ROUTES:
        assert f"| {route} |" in table
