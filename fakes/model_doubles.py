"""The model's wording is the one edge we fake: a stub "model" that follows each prompt mechanically."""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Protocol

from bot.llm.offline import RECALLED_HEADER, OfflineProvider
from bot.text import content_stems, remove_statement
from fakes.replies import Reply, as_json, text


class Asked(Protocol):
    """A request as either stub saw it (fakes.gemini_stub.StubRequest, fakes.openai_stub.ChatRequest)."""

    @property
    def prompt_text(self) -> str:
        """Everything the model was given to read."""
        ...


def element(prompt: str, name: str) -> str:
    """The text inside the last <name>…</name> of a prompt (the data comes after the instructions)."""
    found = re.findall(rf"<{name}>([^<]*)</{name}>", prompt)  # data is escaped: it holds no "<"
    return html.unescape(found[-1]) if found else ""


def scripted_model(request: Asked) -> Reply:  # noqa: PLR0911, PLR0912 -- one return per prompt it answers
    """Merge by appending, forget by sentence, condense by halving, route by keywords, chat by echo, judge by words;
    the same wording behind both stubs."""
    prompt = request.prompt_text
    if "<new_fact>" in prompt:
        existing, fact = element(prompt, "existing_facts"), element(prompt, "new_fact")
        return text(f"{existing} {fact.rstrip('.')}.".strip())
    if "<forget>" in prompt:
        existing, fact, subject = (
            element(prompt, "existing_facts"),
            element(prompt, "forget"),
            element(prompt, "subject"),
        )
        found, kept = remove_statement(
            existing, content_stems(fact, drop=frozenset(subject.casefold().split())), subject=subject
        )  # clause by clause, as the prompt asks
        return as_json({"found": found, "memory": kept if found else existing})
    if "request router" in prompt:
        message = element(prompt, "message")
        if match := re.match(r"(?i)merk dir,? dass (?P<fact>.+)", message):
            return as_json({"route": "remember", "subject": "me", "fact": match["fact"]})
        if match := re.match(r"(?i)wer ist (?P<who>.+?)\??$", message):
            return as_json({"route": "about", "subject": match["who"]})
        if re.search(r"(?i)\bverpasst\b", message):  # "was habe ich verpasst?"
            return as_json({"route": "recap"})
        return as_json({"route": "chat"})
    if "<threads>" in prompt:
        return as_json({"threads": recap(prompt)})
    if "<gold_answer>" in prompt:  # the answer benchmark's judge (prompts/judge.md)
        return as_json(judged(element(prompt, "gold_answer"), element(prompt, "answer")))
    if "<transcript>" in prompt:
        pairs = re.findall(r"<author_id>(\d+)</author_id><author>([^<]*)</author><content>([^<]*)</content>", prompt)
        said: dict[str, list[str]] = {}
        for author_id, _, content in pairs:
            said.setdefault(author_id, []).append(html.unescape(content))
        summaries = [
            {"user_id": uid, "summary": f"wrote {len(lines)} messages, first: {lines[0]}"}
            for uid, lines in said.items()
        ]
        return as_json({"summaries": summaries})
    if '<day date="' in prompt:
        days = re.findall(r'<day date="([^"]+)">([^<]*)</day>', prompt)
        return text(("History: " + " | ".join(f"{d}: {html.unescape(t)}" for d, t in days))[:500])  # "~500 chars"
    if "<today>" in prompt:
        return text(
            f"MERGED facts=[{element(prompt, 'facts')}] today=[{element(prompt, 'today')}] "
            f"history=[{element(prompt, 'history')}] earlier=[{element(prompt, 'earlier')}]"
        )
    if "<channel>" in prompt:
        channel = " / ".join(html.unescape(c) for c in re.findall(r"<content>([^<]*)</content>", prompt))
        reply = f"(stub model) you said: {element(prompt, 'message')} | memory: {element(prompt, 'memory')}"
        return text(reply + (f" | channel: {channel}" if channel else ""))
    facts = element(prompt, "facts")
    return text(facts[len(facts) // 2 :])


def recap(prompt: str) -> list[dict[str, object]]:
    """A recap as a model might write it, mechanically: every thread titled by its first words, summarised by who
    opened it, citing its first message and its longest one (never a ref that was not given)."""
    told = []
    for number, body in re.findall(r'<thread number="(\d+)"[^>]*>(.*?)</thread>', prompt, re.S)[:5]:
        said = re.findall(r'<m ref="(\d+)"[^>]* by="([^"]*)">([^<]*)</m>', body)
        if not said:
            continue
        first, longest = said[0], max(said, key=lambda m: len(m[2]))
        words = html.unescape(first[2]).split()
        told.append(
            {
                "thread": int(number),
                "title": "(stub) " + " ".join(words[:4]),
                "summary": f"(stub model) {html.unescape(first[1])} opened it: {html.unescape(first[2])}",
                "refs": sorted({int(first[0]), int(longest[0])}),
            }
        )
    return told


_SAID = re.compile(r"^(?:\[[^\]]*\]\s*)?(?P<name>[^:\[\]]{1,40}):\s*(?P<words>.+)$")


def answering_model(request: Asked) -> Reply:
    """The scripted model, but answering chat as a reader of the memory would, in a few words: the recalled line
    sharing the most words with the message (the members' names aside; the first such line on a tie), or the turn
    after it when that line is a question, without date and author; "I don't know." when no line shares a word.
    Deterministic and short, so a benchmark of answers (bench.answers) scores something, and a stored reply never
    nests the ones before it as the echo's do; its tokens are counted from what it is sent and says."""
    prompt = request.prompt_text
    if "<channel>" not in prompt or "request router" in prompt or "<gold_answer>" in prompt:
        return counted(scripted_model(request), prompt)
    return counted(text(_answer(prompt)), prompt)


def counted(reply: Reply, prompt: str) -> Reply:
    """`reply` with tokens counted as a server roughly would (four characters a token), not the stub's fixed 11/7."""
    return dataclasses.replace(reply, tokens_in=len(prompt) // 4 + 1, tokens_out=len(reply.text) // 4 + 1)


def _answer(prompt: str) -> str:
    lines = [_SAID.match(line.strip()) for line in element(prompt, "memory").partition(RECALLED_HEADER)[2].splitlines()]
    names = frozenset(m["name"].strip().casefold() for m in lines if m)
    asked = content_stems(element(prompt, "message"), drop=names)
    best, shared = -1, 0
    for i, m in enumerate(lines):
        if m and (n := len(asked & content_stems(m["words"], drop=names))) > shared:
            best, shared = i, n
    if best < 0:
        return "I don't know."
    found, after = lines[best], lines[best + 1] if best + 1 < len(lines) else None
    assert found is not None
    # A question found is answered by the turn after it in the same excerpt (a blank line ends an excerpt).
    return after["words"] if found["words"].rstrip().endswith("?") and after else found["words"]


def judged(gold: str, answer: str) -> dict[str, object]:
    """A mechanical judge: correct when every word of the gold answer is in the answer (case and punctuation aside)."""
    wanted, said = set(re.findall(r"\w+", gold.casefold())), set(re.findall(r"\w+", answer.casefold()))
    missing = sorted(wanted - said)
    reason = f"missing {', '.join(missing)}" if missing else "every word of the gold answer is there"
    return {"reason": reason, "correct": bool(wanted) and not missing}


class RefuseOffline(OfflineProvider):
    """With the stub, a silent fallback would hide a broken Gemini path: fail loudly instead."""

    async def generate(self, call):  # type: ignore[override]
        raise AssertionError(f"fell back offline for {call.operation}")
