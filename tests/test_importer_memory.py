"""An import's memory does not grow with the export (the small version of `python -m bench.import_export`).

Two exports written as DiscordChatExporter writes them, 4,000 and 24,000 messages, each imported by a fresh
process; the test compares the growth of peak RSS with the growth of the file. Reading whole files grew by
5-10 bytes of memory per byte of export (issue 18: 196 / 277 / 441 / 767 MiB at 25 k / 50 k / 100 k / 200 k);
streamed, what stays is the ingest queue, bounded by INGEST_QUEUE_MAX (small here, so both sizes fill it).
"""

from __future__ import annotations

import pytest

from bench.import_export import build, measure


@pytest.mark.slow
def test_peak_memory_of_an_import_does_not_grow_with_the_export(tmp_path):
    small, big = build(tmp_path / "small.json", 4_000), build(tmp_path / "big.json", 24_000)
    rss = {path: measure("stream", path, tmp_path, INGEST_QUEUE_MAX="2000")["rss_mib"] for path in (small, big)}
    file_growth = (big.stat().st_size - small.stat().st_size) / 2**20
    growth = (rss[big] - rss[small]) / file_growth
    assert file_growth > 15
    assert growth < 0.5, f"peak RSS {rss[small]:.0f} → {rss[big]:.0f} MiB for {file_growth:.0f} MiB more export"
