"""bench.soak on a tiny guild (3,000 messages, two questions a band): every checkpoint measured, its figures
computed from what the run stored and asked, the control (no answers) storing none of the bot's replies."""

from __future__ import annotations

from bench import soak
from bench.soak_guild import CHECKPOINTS, MONTHS_FROM


async def test_a_tiny_soak_measures_every_checkpoint_and_the_control_answers_nothing(capsys, monkeypatch):
    monkeypatch.setattr(soak, "PROBES", 20)
    lived = await soak.run(3_000, postgres=None, seed=7, per_band=2, tellings=1)
    points = lived["SQLite"]
    assert [p.month for p in points] == list(CHECKPOINTS)
    for point in points:
        bands = {band for band, _ in point.found}
        assert bands == ({"weeks", "months"} if point.month >= MONTHS_FROM else {"weeks"})
        assert all(len(found) == 2 for found in point.found.values())
        assert len(point.recall) == 20 and point.replies  # timed, at every checkpoint
        # and after the first, its database kept as it was, asked in turn
        assert len(point.first) == (0 if point is points[0] else 20)
        assert point.sizes["rows per member message"] >= 1.0  # its row, and its vector once embedded
        assert 0 < point.sizes["member bytes per member message"] < point.sizes["bytes per member message"]
        assert point.sizes["sources per reply"] > 0
    assert points[-1].sizes["member messages"] > points[0].sizes["member messages"]
    printed = capsys.readouterr().out
    assert "| month | recall p50/p99 ms | month 1 in turn p50/p99 ms |" in printed
    assert "month 12 against month 1" in printed and "asked in turn with month 1's database" in printed

    control = (await soak.run(3_000, postgres=None, seed=7, per_band=1, answering=False, tellings=1))["SQLite"]
    # Only the checkpoints' own questions are answered: the guild's messages to the bot never are.
    assert all(not point.replies for point in control)
