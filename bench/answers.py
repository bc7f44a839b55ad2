"""Answer benchmark: the planted questions of the recall guild (bench.conversations) answered by the bot's real reply
path with whichever model is configured, each answer scored against its gold answer; beside it a full-context
baseline (the whole conversation in the prompt, where it fits), so memory is compared with no memory system at all.

Scores per question type and overall: token F1, exact match and "contains" (SQuAD-normalised, bench/answers_scoring.py)
and, with a judge model (any provider: JUDGE_* settings or --judge-… flags; the rubric is prompts/judge.md), the
share the judge rules correct. Costs per path: model calls, tokens in and out (the `llm_calls` rows), latency p50 /
p99 of the reply and of the baseline's call. The model is built from the environment / `.env` as the bot builds it
(LLM_PROVIDER, GEMINI_API_KEY, OPENAI_BASE_URL, …); with none configured the offline stand-in answers both paths:
the run then checks the pipeline, and its scores are low by construction (it says so).

    python -m bench.answers                              # small profile (20,000 messages), every question
    python -m bench.answers --limit 40 --reuse /tmp/answers-guild.db
    LLM_PROVIDER=openai OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL_FAST=qwen3:8b \\
        python -m bench.answers --context-tokens 32000 --judge-provider openai --judge-model qwen3:32b
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from bench.answers_baseline import Baseline, FullContext, full_context
from bench.answers_judge import Judge, JudgeSettings, build_judge, judge_settings
from bench.answers_reply import Cost, Member, Replied, opened
from bench.answers_scoring import Figures, Tally, percentile, score
from bench.conversation_e2e import MULTI_PART, multi_part
from bench.conversation_guild import Question
from bench.conversation_stories import BASE_TYPES, OVERALL, OVERALL_BASE, REPORTED, score_keys
from bench.conversations import PROFILES, Conversation, generate
from bot.settings import ConfigError, Settings, load_settings

ELEFANT, FULL = "Elefant (the reply path)", "full context (no memory system)"
OFFLINE_NOTE = (
    "No model is configured (LLM_PROVIDER, GEMINI_API_KEY): the offline stand-in answered both paths. It only says it "
    "cannot chat and quotes the line closest to the question, so these scores are low by construction and measure "
    "the pipeline, not answers."
)


@dataclass
class PathResult:
    """One path's answers, scored, and what they cost."""

    name: str
    replies: list[Replied]
    tally: Tally
    cost: Cost

    def latency(self, share: float) -> float:
        """Seconds of the reply (or the baseline's call) at a percentile."""
        return percentile((r.seconds for r in self.replies), share)


@dataclass
class Report:
    """Everything one run measured; `text()` is what it prints."""

    model: str
    offline: bool
    messages: int
    questions: list[Question]
    paths: list[PathResult]
    context: FullContext | None
    context_tokens: int
    judge: Judge | None

    def figures(self, path: str) -> dict[str, Figures]:
        """Per question type, "overall" and "overall, old types", the path's mean scores."""
        return next(p for p in self.paths if p.name == path).tally.figures(keys)

    def fit(self) -> int:
        """Questions whose evidence is all inside the baseline's context."""
        return sum(self.context.holds(q) for q in self.questions) if self.context else 0

    def text(self) -> str:
        judge = self.judge.described if self.judge else "none (set JUDGE_PROVIDER and JUDGE_MODEL, or --judge-…)"
        lines = [
            f"Answer benchmark: {self.messages:,} messages, {len(self.questions)} questions; model: {self.model}; "
            f"judge: {judge}",
            "",
            "Answers per question type: token F1 / exact match / contains (the gold answer inside the answer) / judge",
            "",
            *self._scores(),
            "",
            "Cost and latency",
            "",
            "| path | model calls | tokens in | tokens out | in per question | out per question | p50 | p99 |",
            "|---|---|---|---|---|---|---|---|",
            *(self._cost(p) for p in self.paths),
            "",
            *self._notes(),
        ]
        return "\n".join(lines)

    def _scores(self) -> list[str]:
        asked = {q.type for q in self.questions}
        types = [*REPORTED, *sorted(asked - set(REPORTED))]  # types added later come last, never dropped
        head = "| type | questions | " + " | ".join(f"{p.name}: F1 / EM / contains / judge" for p in self.paths)
        rows = [head + " |", "|---|---|" + "---|" * len(self.paths)]
        tables = [p.tally.figures(keys) for p in self.paths]
        for qtype in (t for t in types if t in tables[0]):
            cells = [_cells(t[qtype]) if qtype in t else "–" for t in tables]
            name = f"**{qtype}**" if qtype == OVERALL else qtype
            rows.append(f"| {name} | {tables[0][qtype].count} | " + " | ".join(cells) + " |")
        return rows

    def _cost(self, path: PathResult) -> str:
        c, n = path.cost, max(1, len(path.replies))
        return (
            f"| {path.name} | {c.calls:,} | {c.tokens_in:,} | {c.tokens_out:,} | {c.tokens_in / n:,.0f} | "
            f"{c.tokens_out / n:,.0f} | {_seconds(path.latency(0.5))} | {_seconds(path.latency(0.99))} |"
        )

    def _notes(self) -> list[str]:
        notes = []
        for path in self.paths:
            c = path.cost
            calls = ", ".join(f"{op} {n}" for op, n in sorted(c.operations.items()))
            failed = f"; the model failed {c.failed} calls, answered offline" if c.failed else ""
            notes.append(f"{path.name}: calls {calls or 'none'}{failed}.")
        routes = Counter(r.route for r in self.paths[0].replies)
        total = max(1, sum(routes.values()))
        notes.append("Routes taken: " + ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(routes.items())) + ".")
        if self.context is not None:
            ctx = self.context
            notes.append(
                f"Full context: the conversation is {ctx.tokens:,} tokens ({ctx.messages:,} messages); the newest "
                f"{ctx.kept_tokens:,} tokens ({ctx.kept_messages:,} messages) fit a {self.context_tokens:,}-token "
                f"context; all evidence inside for {self.fit()} of {len(self.questions)} questions."
            )
        if self.judge is not None:
            failed = f", {self.judge.failed} without a ruling (failed)" if self.judge.failed else ""
            notes.append(f"Judge: {self.judge.calls} verdicts asked{failed}.")
        if self.offline:
            notes += [
                "Tokens are estimated (four characters a token), as the offline provider counts them.",
                OFFLINE_NOTE,
            ]
        return notes


def keys(qtype: str) -> tuple[str, ...]:
    """The rows an answer counts in, as bench/conversation_e2e.py counts them: its type, "overall", and "overall, old
    types" for the first five types and the multi-part questions (the set "overall" was before issue 38)."""
    return (MULTI_PART, OVERALL, OVERALL_BASE) if qtype == MULTI_PART else score_keys(qtype)


def ordered(conv: Conversation) -> list[Question]:
    """The questions in bench/conversation_e2e.py's order: the first five types', the multi-part ones, the harder
    types' (each answer is stored, so what a question meets in the channel depends on what came before it)."""
    first = [q for q in conv.questions if q.type in BASE_TYPES]
    return first + multi_part(conv) + [q for q in conv.questions if q.type not in BASE_TYPES]


def _cells(f: Figures) -> str:
    judged = f"{f.judge:.2f}" if f.judge is not None else "–"
    return f"{f.f1:.2f} / {f.em:.2f} / {f.contained:.2f} / {judged}"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def pick(questions: list[Question], limit: int | None) -> list[Question]:
    """At most `limit` questions, spread evenly over the list (so every type keeps its share)."""
    if not limit or limit >= len(questions):
        return questions
    step = len(questions) / limit
    return [questions[int(i * step)] for i in range(limit)]


def describe(settings: Settings) -> str:
    """The model in use as an operator names it, without keys."""
    if settings.provider == "offline":
        return "offline (no model configured)"
    models = settings.role_models
    where = settings.openai_base_url if settings.provider == "openai" else settings.gemini_base_url
    at = f" at {where}" if where else ""
    return f"{settings.provider} {models['fast']} (batch {models['batch']}){at}"


async def run(
    settings: Settings,
    *,
    profile: str | int = "small",
    limit: int | None = None,
    context_tokens: int = 120_000,
    baseline: bool = True,
    reuse: Path | None = None,
    judge: JudgeSettings | None = None,
) -> Report:
    """Ask, score, and report (printing nothing: `main` prints `Report.text()`)."""
    conv = generate(profile)
    questions = pick(ordered(conv), limit)
    # What memory gives, not how busy the machine is: a reply gives memory up after MEMORY_WAIT_SECONDS (1 s),
    # as bench/conversation_recall.py explains; here it may take 10.
    settings = settings.model_copy(update={"memory_wait_seconds": max(10.0, settings.memory_wait_seconds)})
    paths: list[tuple[str, list[Replied], Cost]] = []
    context = None
    with tempfile.TemporaryDirectory(prefix="elefant-answers-") as tmp:
        async with opened(conv, Path(tmp), settings, reuse=reuse) as (memory, llm, meter):
            start = len(meter.rows)
            replies = await Member(memory, llm, conv).ask_all(questions)
            await llm.flush_usage()
            paths.append((ELEFANT, replies, meter.since(start)))
            if baseline:
                context = full_context(conv, context_tokens)
                start = len(meter.rows)
                replies = await Baseline(llm, conv, context, memory.settings).ask_all(questions)
                paths.append((FULL, replies, meter.since(start)))
    ruler = Judge(build_judge(judge), judge.described()) if judge is not None else None
    try:
        scored = [
            PathResult(name, replies, await _score(questions, replies, ruler), cost) for name, replies, cost in paths
        ]
    finally:
        if ruler is not None:
            await ruler.close()
    offline = settings.provider == "offline"
    return Report(describe(settings), offline, conv.message_count, questions, scored, context, context_tokens, ruler)


async def _score(questions: list[Question], replies: list[Replied], judge: Judge | None) -> Tally:
    tally = Tally()
    for question, reply in tqdm(list(zip(questions, replies, strict=True)), desc="scoring", leave=False):
        ruled = await judge.rule(question.text, question.answer, reply.text) if judge is not None else None
        tally.add(score(question.type, reply.text, question.answer, ruled))
    return tally


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="small", help="small (20,000 messages), large (1,000,000) or a count")
    parser.add_argument("--limit", type=int, help="ask at most this many questions, spread over the types")
    parser.add_argument("--context-tokens", type=int, default=120_000, help="the baseline model's context size")
    parser.add_argument("--no-baseline", action="store_true", help="ask the reply path only")
    parser.add_argument("--reuse", type=Path, help="a database file built by an earlier run (built there if missing)")
    parser.add_argument("--judge", action="store_true", help="grade answers with the JUDGE_* model too")
    parser.add_argument("--judge-provider", choices=["gemini", "openai"], help="the judge's provider (implies --judge)")
    parser.add_argument("--judge-model", help="the judge's model (implies --judge)")
    parser.add_argument("--judge-base-url", help="the judge's endpoint (implies --judge); its key: JUDGE_API_KEY")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.context_tokens < 1:
        parser.error("--context-tokens must be at least 1")
    args.profile = args.profile if args.profile in PROFILES else _count(parser, args.profile)
    args.judge = args.judge or bool(args.judge_provider or args.judge_model or args.judge_base_url)
    return args


def _count(parser: argparse.ArgumentParser, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        parser.error(f"--profile must be small, large or a number of messages, not {value!r}")
    return int(value)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    try:
        settings = load_settings(
            discord_token=None, database_url="sqlite+aiosqlite:///unused"
        )  # each run builds its own
        judge = (
            judge_settings(provider=args.judge_provider, model=args.judge_model, base_url=args.judge_base_url)
            if args.judge
            else None
        )
    except ConfigError as exc:
        sys.exit(str(exc))
    report = asyncio.run(
        run(
            settings,
            profile=args.profile,
            limit=args.limit,
            context_tokens=args.context_tokens,
            baseline=not args.no_baseline,
            reuse=args.reuse,
            judge=judge,
        )
    )
    print("\n" + report.text())


if __name__ == "__main__":
    main()
