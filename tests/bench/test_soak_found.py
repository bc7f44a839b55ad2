"""bench.soak_found on a tiny guild: every band of a checkpoint measured, its shares computed from what it asked."""

from __future__ import annotations

from bench import soak_found


async def test_a_tiny_guild_is_measured_for_every_band_of_a_checkpoint(capsys):
    rows = await soak_found.run(3_000, [6], postgres=None, tellings=1)
    assert [(month, band) for month, band, *_ in rows] == [("6", "weeks"), ("6", "months")]
    for _, _, found, never in rows:
        share, counted = found.split(" (")
        hits, asked = (int(n) for n in counted.rstrip(")").split(" / "))
        assert asked > 0 and 0 <= hits <= asked and float(share) == round(hits / asked, 2)
        assert int(never) >= 0
    assert "| month | band | found (all evidence packed) |" in capsys.readouterr().out
