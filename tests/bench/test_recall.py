"""The recall benchmark at a small size: its quality figures are a regression test (latency is not checked
here; these machines are too noisy for absolute times)."""

from __future__ import annotations

from bench.recall import measure, parse


async def test_recall_finds_weeks_old_answers_the_newest_messages_do_not_hold(tmp_path):
    figures = await measure(parse(["--messages", "20000", "--dir", str(tmp_path)]))
    assert figures.questions == 32
    assert figures.recall_at_5 >= 0.8
    assert figures.in_context >= 0.7
    assert figures.in_baseline < figures.in_context  # answers 15+ days back are not among the newest
    assert "| recall@5 |" in figures.table()
