"""The recap benchmark at a small size: its quality figures are a regression test (gather time is not checked here;
these machines are too noisy for absolute times)."""

from __future__ import annotations

from bench.recap import measure, parse, report
from bench.recap_guild import AFTER, LEAVES, day


def test_the_day_plants_its_threads_after_the_asker_left():
    made = day(3, 100)
    assert len(made.planted) == AFTER and all(p.started > LEAVES for p in made.planted)
    said = {s.message_id: s for s in made.said}
    assert all(said[opener].at < said[decision].at for opener, decision in (p.keys for p in made.planted))
    assert day(3, 100).said == made.said  # a seed is a day


async def test_a_recap_links_the_planted_threads_for_less_than_the_span_costs(capsys):
    results = await measure(parse(["--runs", "2", "--filler", "400"]))
    for mode in ("offline", "stub"):
        tally = results[(mode, 400)]
        assert min(tally.found) >= 0.75, (mode, tally.found)  # 3 of the 4 planted threads at least, each day
        assert max(tally.tokens) < min(tally.raw)
    report(results, 2)
    assert "| offline |" in capsys.readouterr().out
