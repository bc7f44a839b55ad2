"""The assembled context never exceeds its budget, keeps facts whole when they fit, and drops by priority."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.llm.budget import Section, assemble
from bot.llm.tokens import estimate_tokens

words = st.text(alphabet=st.sampled_from("abcdefghij klmno. "), min_size=0, max_size=3000)


def sections(facts: str, today: str, week: str, items: list[str]) -> list[Section]:
    return [
        Section("Facts", facts, guaranteed=True),
        Section("Today", today, share=0.3),
        Section("Last week", week, share=0.25, keep="end"),
        Section("Recalled", items=items, share=0.35),
    ]


@settings(max_examples=300, deadline=None)
@given(words, words, words, st.lists(st.text(min_size=1, max_size=400), max_size=20), st.integers(0, 3000))
def test_never_over_budget_and_facts_kept_whole_when_they_fit(facts, today, week, items, budget):
    out = assemble(sections(facts, today, week, items), budget)
    assert estimate_tokens(out) <= budget
    if facts.strip() and estimate_tokens("Facts: ") + estimate_tokens(facts.strip()) <= budget - 3:
        assert out.startswith(f"Facts: {facts.strip()}")
    labels = [
        line.split(":")[0]
        for line in out.splitlines()
        if line.split(":")[0] in {"Facts", "Today", "Last week", "Recalled"}
    ]
    assert labels == sorted(labels, key=["Facts", "Today", "Last week", "Recalled"].index)


def test_unused_share_goes_to_the_next_sections_and_items_are_whole():
    items = [f"snippet {i} " + "x" * 100 for i in range(30)]
    out = assemble(sections("Ana likes tea.", "", "", items), 400)
    assert out.startswith("Facts: Ana likes tea.\nRecalled:\n- snippet 0")
    assert estimate_tokens(out) <= 400 and out.count("- snippet") > 10  # more than its 35 % share alone
    assert all(
        line == "Recalled:"
        or (line.startswith(("Facts", "- snippet")) and (not line.startswith("- ") or line.endswith("x")))
        for line in out.splitlines()
    )


def test_history_keeps_its_newest_end():
    week = " ".join(f"On 2026-11-{d:02d}: day {d} happened." for d in range(1, 30))
    out = assemble(sections("", "", week, []), 40)
    assert out.startswith("Last week: ") and out.endswith("day 29 happened.")


def test_long_facts_leave_every_section_its_share_of_the_rest():
    facts = "Ana likes tea. " * 60  # about half of the budget
    long = "something happened. " * 400
    out = assemble(sections(facts, long, long, [long[:200]] * 5), 500)
    assert out.startswith(f"Facts: {facts.strip()}") and estimate_tokens(out) <= 500
    assert [line.split(":")[0] for line in out.splitlines() if not line.startswith("- ")] == [
        "Facts",
        "Today",
        "Last week",
        "Recalled",
    ]  # trimmed to their shares, none dropped whole
