"""The offline provider: deterministic, no network, honest about not being a model.

It works from the structured inputs of an operation (not by parsing the prompt): remember appends a
sentence unless it is a (near) duplicate, forget removes matching sentences, summaries quote the most
informative lines, merges are labelled concatenations within the budget, recaps quote each thread's most
central messages (bot/llm/recap.py).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from bot.llm.budget import assemble, memory_sections
from bot.llm.prompts import ChatLine
from bot.llm.recap import extractive
from bot.llm.schemas import DailySummaries, ForgetResult, RouteDecision, UserSummary
from bot.llm.tokens import estimate_tokens, sentences, trim_to_chars
from bot.llm.types import Call, LLMResult
from bot.text import WORD, content_stems, remove_statement

MODEL = "offline"
_WORD = re.compile(r"[\w']+")
_STOP = {"a", "an", "the", "is", "are", "was", "that", "this", "to", "of", "and", "in", "on", "it", "he", "she"}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOP}


def _similar(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else float(a.strip().casefold() == b.strip().casefold())


def as_sentence(text: str, *, name: str = "") -> str:
    """One tidy sentence: capitalised (unless it starts with a name written in lower case), ending in a stop."""
    text = " ".join(text.split()).strip()
    if not text:
        return ""
    if not (name and text.startswith(name)):
        text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def remember(existing: str, fact: str, *, subject: str = "") -> str:
    """Append `fact` unless an existing sentence already says (nearly) the same."""
    new = as_sentence(fact, name=subject)
    kept = sentences(existing)
    if not new or any(_similar(s, new) >= 0.8 for s in kept):
        return " ".join(kept)
    return " ".join([*kept, new])


def forget(existing: str, fact: str, *, subject: str = "") -> ForgetResult:
    """Remove the clauses that state `fact` (the rest of their sentences stays); found only if one went."""
    drop = frozenset(WORD.findall(subject.casefold()))
    found, remaining = remove_statement(existing, content_stems(fact, drop=drop), subject=subject)
    return ForgetResult(found=found, memory=remaining if found else existing)


def summarise_day(lines: Sequence[ChatLine], *, max_chars: int = 300) -> DailySummaries:
    """Per author, the most informative lines of the day, quoted, within `max_chars`."""
    by_author: dict[int, list[ChatLine]] = defaultdict(list)
    for line in lines:
        by_author[line.author_id].append(line)
    summaries = []
    for author_id, said in by_author.items():
        name = said[0].author
        unique = list(dict.fromkeys(line.content.strip() for line in said if line.content.strip()))
        best = sorted(unique, key=lambda text: (-len(_words(text)), unique.index(text)))
        head = f"{name} wrote {len(said)} message{'s' if len(said) != 1 else ''}"
        quotes: list[str] = []
        for text in best:
            candidate = f"{head}: " + "; ".join(f'"{q}"' for q in [*quotes, text])
            if len(candidate) > max_chars:
                break
            quotes.append(text)
        if quotes:
            body = f"{head}: " + "; ".join(f'"{q}"' for q in quotes)
        else:
            body = trim_to_chars(f'{head}: "{best[0]}"', max_chars) if best else f"{head}."
        summaries.append(UserSummary(user_id=str(author_id), summary=body))
    return DailySummaries(summaries=summaries)


def summarise_history(days: Sequence[tuple[str, str]], *, max_chars: int = 500) -> str:
    """Dated daily summaries, newest kept when they do not all fit."""
    text = " ".join(f"On {day}: {summary}" for day, summary in days if summary)
    return trim_to_chars(text, max_chars, keep="end")


def merge_context(facts: str, current_day: str, history: str, earlier: str = "", *, max_tokens: int) -> str:
    """A labelled concatenation, facts first, each section within its share of the token budget."""
    return assemble(memory_sections(facts, current_day, history, earlier), max_tokens)


OFFLINE_REASON = "offline_reason"  # a variable the LLM client adds when it falls back: "failing"
CAN_STILL = (
    "I can still remember things (“remember that …”), forget them, and tell you what I know "
    "(“what do you know about me?”)."
)


# A model answers chat in a few sentences, whatever it was given: so does the offline stand-in (the whole memory
# repeated into every reply made each stored reply ~12 KB). What a reply was given stays visible through
# `/memory show`, `/context` and `python -m bot prompt`.
RECALLED_HEADER = "Recalled conversation:"
MENTIONED_CHARS = 240


def chat(memory: str, author: str, reason: str = "none", message: str = "") -> str:
    """What the bot says when asked to chat without a model: why (none configured, or failing), what it knows about
    the author first (facts lead the context: they are always served), and the one recalled line that bears most on
    the message."""
    opening = (
        f"The model is failing right now, so I can't chat properly, {author}."
        if reason == "failing"
        else f"I'm running without a language model, so I can't chat, {author}."
    )
    own, recalled = _lines(memory)
    said = [opening, CAN_STILL]
    if own:
        said.append(f"What I remember about you: {trim_to_chars(own[0], MENTIONED_CHARS)}")
    if line := closest_line(recalled, message):
        said.append(f"From what was said here: {trim_to_chars(line, MENTIONED_CHARS)}")
    return " ".join(said)


def _lines(memory: str) -> tuple[list[str], list[str]]:
    """The memory's own lines (the author's context, mentioned members' facts) and its recalled ones."""
    own, _, recalled = memory.partition(RECALLED_HEADER)

    def kept(part: str) -> list[str]:
        return [line.strip() for line in part.splitlines() if line.strip() and not line.strip().endswith(":")]

    return kept(own), kept(recalled)


def closest_line(lines: list[str], message: str) -> str:
    """The line sharing the most content words with `message` (none shared: none)."""
    asked = content_stems(message)
    best = max(lines, key=lambda line: len(asked & content_stems(line)), default="")
    return best if asked & content_stems(best) else ""


class OfflineProvider:
    """Answers every operation deterministically from its structured inputs."""

    name = "offline"

    async def generate(self, call: Call) -> LLMResult:
        """Run the deterministic version of the call's operation."""
        started = time.perf_counter()
        parsed: Any = None
        operation, prompt, v = call.operation, call.prompt, call.variables
        if operation == "remember":
            text = remember(v["existing"], v["fact"], subject=str(v.get("subject", "")))
        elif operation == "forget":
            parsed = forget(v["existing"], v["fact"], subject=str(v.get("subject", "")))
            text = parsed.model_dump_json()
        elif operation == "condense":
            text = trim_to_chars(v["existing"], int(v["max_chars"]), keep="end")
        elif operation == "route":
            parsed = RouteDecision(route="chat")
            text = parsed.model_dump_json()
        elif operation == "daily_summary":
            parsed = summarise_day(v["lines"])
            text = parsed.model_dump_json()
        elif operation == "historical_summary":
            text = summarise_history(v["days"])
        elif operation == "merge_context":
            text = merge_context(
                v["facts"], v["current_day"], v["history"], v.get("earlier", ""), max_tokens=int(v["max_tokens"])
            )
        elif operation == "recap":
            parsed = extractive(v["threads"])
            text = parsed.model_dump_json()
        elif operation == "chat":
            text = chat(v["memory"], v["author"], str(v.get(OFFLINE_REASON, "none")), str(v.get("message", "")))
        else:
            raise ValueError(f"unknown operation {operation!r}")
        return LLMResult(
            text=text,
            parsed=parsed,
            tokens_in=estimate_tokens(prompt.system + prompt.user),
            tokens_out=estimate_tokens(text),
            model=MODEL,
            latency_s=time.perf_counter() - started,
            provider=self.name,
        )
