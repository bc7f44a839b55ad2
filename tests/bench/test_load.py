"""bench.load's verdicts: sustained only when every reply is in time and the model's; a missing reply is late."""

from __future__ import annotations

from bench.load import Run


def run(latencies: list[float], *, deadline_answers: int = 0, unanswered: int = 0) -> Run:
    kinds = {"model": len(latencies) - deadline_answers, "deadline": deadline_answers, "offline": 0}
    return Run(200, 1, 4000, latencies, unanswered, kinds, 0.1, 0, 0, 0, 0, 10.0)


def test_a_reply_past_the_deadline_and_a_second_or_a_missing_one_fails_the_run() -> None:
    assert run([0.5, 2.0, 10.9]).passed
    assert not run([0.5, 11.2]).in_time
    assert not run([0.5], unanswered=1).in_time and run([0.5], unanswered=1).late == 1


def test_answers_from_memory_at_the_deadline_are_in_time_but_not_sustained() -> None:
    answered = run([10.1, 10.2], deadline_answers=2)
    assert answered.in_time and not answered.passed
    assert answered.pct(50) == 10.2 and answered.row()[6] == "0 %"
