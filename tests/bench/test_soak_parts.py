"""bench.soak_parts on a tiny guild: two checkpoints asked the same questions in turn, every part timed, and the
bot's own functions back as they were afterwards."""

from __future__ import annotations

from bench import soak, soak_parts
from bot.memory.recall import search, vectors


async def test_a_tiny_guild_times_every_part_at_both_checkpoints_and_leaves_recall_as_it_was(capsys, monkeypatch):
    monkeypatch.setattr(soak, "PROBES", 6)
    originals = (search.rank_messages, vectors.VectorIndex.search, search.Recall.find)
    rows = await soak_parts.run(3_000, [1, 12], postgres=None, tellings=1)
    labels = [label for label, *_ in rows]
    assert labels == ["recall p50", "recall p99", *(label for _, _, label in soak_parts.PARTS), soak_parts.CANDIDATES]
    measured = {label: (float(first), float(last)) for label, first, last, _ in rows}
    for label in ("recall p50", "search (all of the above)", "ranking", soak_parts.CANDIDATES):
        assert all(value > 0 for value in measured[label]), label
    assert all(p99 >= p50 for p50, p99 in zip(measured["recall p50"], measured["recall p99"], strict=True))
    assert (search.rank_messages, vectors.VectorIndex.search, search.Recall.find) == originals
    assert "| part | month 1 | month 12 | last / first |" in capsys.readouterr().out
