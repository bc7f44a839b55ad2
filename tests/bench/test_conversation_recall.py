"""The recall benchmark's reports: a column per question type, the harder ones of issue 38 too, "overall" over every
question and "overall, old types" over the question set "overall" was before them."""

from __future__ import annotations

from bench import conversation_e2e as end_to_end
from bench.conversation_e2e import Asked, EndToEnd
from bench.conversation_guild import Question
from bench.conversation_recall import baselines, end_to_end_report, table
from bench.conversation_stories import BASE_TYPES, HARDER_TYPES, OVERALL, OVERALL_BASE, REPORTED
from bench.conversations import generate


def _mean(values: list[bool]) -> float:
    return sum(values) / len(values)


def test_the_tables_show_every_type_and_overall_with_and_without_the_harder_ones():
    conv = generate(2_000, seed=7)
    rows = baselines(conv, 2000)  # the BM25 rows, as the benchmark prints them
    printed = table(rows, 0).splitlines()
    assert printed[0] == "| what the model receives | " + " | ".join(REPORTED) + " |"
    assert {"spread", "answered_by_other", "wrong_speaker"} <= set(REPORTED) and OVERALL_BASE in REPORTED
    for name, result in rows:
        assert set(REPORTED) <= set(result), name
        counts = {t: sum(q.type == t for q in conv.questions) for t in (*BASE_TYPES, *HARDER_TYPES)}
        old = sum(result[t][0] * counts[t] for t in BASE_TYPES) / sum(counts[t] for t in BASE_TYPES)
        every = sum(result[t][0] * n for t, n in counts.items()) / sum(counts.values())
        assert abs(result[OVERALL_BASE][0] - old) < 1e-9 and abs(result[OVERALL][0] - every) < 1e-9


def test_end_to_end_counts_the_multi_part_questions_in_the_old_overall_and_never_the_repeats():
    conv = generate(2_000, seed=7)
    questions = [*conv.questions, *end_to_end.multi_part(conv, count=6)]
    found = [i % 3 == 0 for i in range(len(questions))]
    asked = [Asked(q, "chat", f, [f] * len(q.evidence_ids), 100, True) for q, f in zip(questions, found, strict=True)]
    repeats = [
        Asked(Question(q.text, q.asker_id, q.asked_at, end_to_end.TWICE, q.evidence_ids, q.answer, q.story),
              "chat", False, [False] * len(q.evidence_ids), 100, True)
        for q in conv.questions[:8]
    ]  # fmt: skip
    result = EndToEnd(asked + repeats).result()
    old = [f for q, f in zip(questions, found, strict=True) if q.type in (*BASE_TYPES, end_to_end.MULTI_PART)]
    assert result[OVERALL][0] == _mean(found)
    assert result[OVERALL_BASE][0] == _mean(old)
    assert result[end_to_end.TWICE][0] == 0.0
    for qtype in HARDER_TYPES:
        assert result[qtype][0] == _mean([f for q, f in zip(questions, found, strict=True) if q.type == qtype])
    report = end_to_end_report([("Elefant", EndToEnd(asked + repeats))], result).splitlines()
    header = next(line for line in report if line.startswith("| path |"))
    assert header == "| path | " + " | ".join((*REPORTED, end_to_end.MULTI_PART, end_to_end.TWICE)) + " |"
