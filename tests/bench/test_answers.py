"""The answer benchmark end to end on a small guild: offline, and against the model stubs over HTTP, where a model
that answers with the gold answer scores 1 and one that answers nonsense scores 0 (on every path, judge included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import answers
from bench.answers import ELEFANT, FULL
from bench.answers_baseline import full_context
from bench.answers_judge import JudgeSettings, judge_settings
from bench.answers_reply import addressed
from bench.answers_scoring import OVERALL, contains, exact_match, normalise, percentile, token_f1
from bench.conversation_e2e import MULTI_PART, multi_part
from bench.conversation_stories import BASE_TYPES, OVERALL_BASE
from bench.conversations import generate
from bot.settings import ConfigError, Settings
from fakes.gemini_stub import GeminiStub
from fakes.model_doubles import Asked, answering_model, element, scripted_model
from fakes.openai_stub import OpenAIStub
from fakes.replies import Reply, as_json, text
from tests.llm.test_probe import PROVIDER_SETTINGS

MESSAGES, LIMIT = 2_000, 6


@pytest.fixture(autouse=True)
def no_model_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """The models are the ones each test configures, whatever the shell running the suite has set."""
    for name in PROVIDER_SETTINGS | {"MODEL_FAST", "MODEL_BATCH", "EMBEDDING_MODEL"}:
        monkeypatch.delenv(name, raising=False)
    for name in ("PROVIDER", "MODEL", "BASE_URL", "API_KEY", "REQUESTS_PER_MINUTE"):
        monkeypatch.delenv(f"JUDGE_{name}", raising=False)


@pytest.fixture(scope="module")
def guild(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the small guild's database is built by the first run and reused (copied) by the others."""
    return tmp_path_factory.mktemp("answers") / "guild.db"


def settings(**model: object) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url="sqlite+aiosqlite:///unused",
        embedding_model="none",  # words only: seconds, not minutes
        llm_fast_requests_per_minute=100_000,
        llm_batch_requests_per_minute=100_000,
        llm_fast_tokens_per_minute=0,
        **model,
    )


def gold_answers() -> dict[str, str]:
    """Each question as the model reads it in <message>, and its gold answer."""
    conv = generate(MESSAGES)
    return {addressed(q)[1]: q.answer for q in conv.questions + multi_part(conv)}


def model(answer: str) -> tuple:
    """A stub model that routes every message to chat, judges mechanically, and answers `answer` ("gold": the
    question's gold answer)."""
    golds = gold_answers()

    def respond(request: Asked) -> Reply:
        prompt = request.prompt_text
        if "request router" in prompt:
            return as_json({"route": "chat"})
        if "<gold_answer>" in prompt:
            return scripted_model(request)
        return text(golds[element(prompt, "message")] if answer == "gold" else answer)

    return respond


async def test_offline_it_runs_end_to_end_and_says_its_scores_are_low(guild):
    report = await answers.run(settings(), profile=MESSAGES, limit=LIMIT, reuse=guild)
    assert [p.name for p in report.paths] == [ELEFANT, FULL]
    for path in report.paths:
        figures = path.tally.figures()
        assert figures[OVERALL].count == LIMIT and figures[OVERALL].judge is None
        assert sum(f.count for k, f in figures.items() if k != OVERALL) == LIMIT
        assert path.cost.calls == LIMIT and path.cost.offline == LIMIT  # one chat call each; offline routes itself
        assert path.cost.tokens_in > path.cost.tokens_out > 0
        assert all("running without a language model" in r.text for r in path.replies)
    # The baseline's prompt holds the whole small conversation, the reply's only what memory chose.
    assert report.paths[1].cost.tokens_in > 5 * report.paths[0].cost.tokens_in
    assert report.fit() == LIMIT and report.context is not None
    assert report.context.kept_messages == report.context.messages == report.messages > MESSAGES  # harder on top
    rows = report.figures(ELEFANT)  # the rows printed: the e2e benchmark's, multi-part in the old overall
    old = [q for q in report.questions if q.type in BASE_TYPES or q.type == MULTI_PART]
    assert 0 < rows[OVERALL_BASE].count == len(old) < rows[OVERALL].count == LIMIT
    printed = report.text()
    assert f"| overall, old types | {len(old)} |" in printed
    assert "| type | questions |" in printed and "| path | model calls |" in printed
    assert "low by construction" in printed and f"all evidence inside for {LIMIT} of {LIMIT}" in printed


@pytest.mark.parametrize(("answer", "expected"), [("gold", 1.0), ("it was a lovely day, no idea", 0.0)])
async def test_against_the_stubs_scores_follow_the_answers(guild, answer, expected):
    """The model (OpenAI-compatible stub) and the judge (Gemini stub) over HTTP: a model answering each question's
    gold answer scores 1 on every figure, one answering nonsense 0; the stub's token counts are what is summed."""
    respond = model(answer)
    chat = await OpenAIStub(responder=respond).start()
    judging = await GeminiStub(responder=respond).start()
    try:
        configured = settings(llm_provider="openai", openai_base_url=chat.base_url, openai_model_fast="stub-model")
        judge = JudgeSettings(  # type: ignore[call-arg]
            _env_file=None, provider="gemini", model="gemini-2.5-flash", base_url=judging.base_url, api_key="k"
        )
        report = await answers.run(configured, profile=MESSAGES, limit=LIMIT, reuse=guild, judge=judge)
    finally:
        await chat.stop()
        await judging.stop()
    for path in report.paths:
        overall = path.tally.figures()[OVERALL]
        assert (overall.f1, overall.em, overall.contained, overall.judge) == (expected, expected, expected, expected)
        assert path.cost.failed == path.cost.offline == 0
        assert path.cost.tokens_in == 11 * path.cost.calls  # the stub's usage, per call
    elefant, full = report.paths
    assert elefant.cost.operations["chat"] == full.cost.operations["chat"] == full.cost.calls == LIMIT
    assert elefant.cost.calls == LIMIT + elefant.cost.operations.get("route", 0)
    assert report.judge is not None and report.judge.calls == 2 * LIMIT and report.judge.failed == 0
    assert len(judging.requests) == 2 * LIMIT
    assert "openai stub-model" in report.text() and "gemini gemini-2.5-flash" in report.text()
    assert "low by construction" not in report.text()


async def test_against_the_gemini_stub_the_answering_model_answers_with_lines_it_was_given(guild):
    """The model on the Gemini stub, no judge: the answering model replies with a line of the guild (or says it does
    not know), a few words, never the echo that nests every earlier reply."""
    stub = await GeminiStub(responder=answering_model).start()
    try:
        configured = settings(gemini_api_key="k", gemini_base_url=stub.base_url, model_fast="gemini-2.5-flash")
        report = await answers.run(configured, profile=MESSAGES, limit=LIMIT, reuse=guild)
    finally:
        await stub.stop()
    said = {m.text for m in generate(MESSAGES).messages} | {"I don't know."}
    for path in report.paths:
        assert all(r.text in said for r in path.replies), [r.text for r in path.replies]
        assert path.cost.failed == 0 and path.tally.figures()[OVERALL].judge is None
    # Tokens as the server counted them: the whole conversation costs the baseline far more than the reply's memory.
    elefant, full = report.paths
    assert full.cost.tokens_in / full.cost.calls > 3 * elefant.cost.tokens_in / elefant.cost.calls
    assert full.cost.tokens_in > report.context.kept_tokens * LIMIT  # type: ignore[union-attr]
    assert report.judge is None and "judge: none" in report.text()
    assert "gemini gemini-2.5-flash" in report.text()


def test_the_answering_model_reads_the_recalled_lines_and_answers_a_question_found_with_the_turn_after():
    def asked(memory: str, message: str) -> str:
        prompt = f"<memory>{memory}</memory>\n<channel>\n</channel>\n<message>{message}</message>"
        return answering_model(type("Request", (), {"prompt_text": prompt})()).text

    memory = (
        "Ana likes tea.\nRecalled conversation:\n[2026-03-01] Rui: who do you main?\nMira: yasuo, always\n\n"
        "[2026-04-02] Mira: I main support now\n[2026-05-03] Jon: the mountain pass was closed"
    )
    assert asked(memory, "which character does Mira main?") == "yasuo, always"  # first on a tie; the turn after
    assert asked(memory, "was the pass open, Jon?") == "the mountain pass was closed"  # names aside
    assert asked(memory, "does Ana like tea?") == "I don't know."  # only recalled lines are read


def test_the_baseline_keeps_the_newest_lines_that_fit_and_counts_the_questions_inside():
    conv = generate(MESSAGES)
    questions = conv.questions + multi_part(conv)
    whole = full_context(conv, 120_000)
    assert whole.kept_messages == conv.message_count and all(whole.holds(q) for q in questions)
    cut = full_context(conv, 8_000)
    assert 0 < cut.kept_messages < conv.message_count and cut.kept_tokens <= 6_000 < cut.tokens == whole.tokens
    newest = [m for m in conv.messages][-cut.kept_messages :]
    assert cut.memory.endswith(newest[-1].text) and newest[0].text in cut.memory
    assert conv.messages[-cut.kept_messages - 1].text not in cut.memory.split("\n", 2)[1]
    inside = sum(cut.holds(q) for q in questions)
    assert 0 <= inside < len(questions)
    assert inside == sum(all(i >= newest[0].message_id for i in q.evidence_ids) for q in questions)


def test_scores_are_squad_normalised():
    assert normalise("The Dolomites!  ") == "dolomites"
    assert exact_match("the Dolomites.", "dolomites") == 1.0
    assert exact_match("yes, the dolomites", "dolomites") == 0.0
    assert token_f1("yes, at the dolomites", "at the dolomites") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert token_f1("no idea", "dolomites") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("", "x") == 0.0
    assert contains("She went camping in the Dolomites, in June.", "the dolomites") == 1.0
    assert contains("dolomitesque", "dolomites") == 0.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0 and percentile(range(1, 101), 0.99) == 99
    assert percentile([], 0.5) == 0.0


def test_a_judge_without_a_provider_or_model_gets_one_sentence(monkeypatch):
    with pytest.raises(ConfigError, match="JUDGE_PROVIDER"):
        judge_settings(model="m", env_file=False)
    with pytest.raises(ConfigError, match="JUDGE_API_KEY"):
        judge_settings(provider="gemini", model="m", env_file=False)
    monkeypatch.setenv("JUDGE_PROVIDER", "openai")
    assert judge_settings(model="m", base_url="http://127.0.0.1:1/v1", env_file=False).described() == (
        "openai m at http://127.0.0.1:1/v1"
    )


def test_bad_flags_are_refused_with_a_sentence(capsys):
    for argv in (["--limit", "0"], ["--profile", "medium"], ["--context-tokens", "0"]):
        with pytest.raises(SystemExit):
            answers.parse(argv)
    assert "--profile must be small, large or a number of messages" in capsys.readouterr().err
    assert answers.parse(["--judge-model", "m"]).judge
