"""A recap's input as the model receives it, and the extractive recap made from the same input without a model.

The memory layer (bot/memory/recap/) reads a span, splits it into threads of conversation and marks each thread's
most central messages; here those threads become the `recap` prompt's data (numbered threads of numbered
messages, and summaries of whole past days) and, for the offline provider and for a reply whose model is slow,
the extractive recap: each thread's title, its most central messages quoted with their authors, what looks
decided and what was asked and left open, and the refs of the messages that matter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from xml.sax.saxutils import quoteattr

from bot.llm.prompts import xml_text
from bot.llm.schemas import Recap, RecapItem
from bot.llm.tokens import trim_to_chars
from bot.text import clean

THREADS_TOLD = 5  # a recap tells at most this many threads (the prompt asks the model for as many)
KEYS_TOLD = 3  # messages linked per thread
QUOTE_CHARS = 160
FLAGGED_TOLD = 2  # decisions and open questions quoted per thread
KEY = ' key="1"'  # a thread's most central messages, as the prompt marks them
_DECIDED = re.compile(r"^\s*(?:decided|decision|final(?:ly)?|agreed)\s*[:,-]\s*", re.I)  # "Decided: decided: …"


@dataclass(frozen=True, slots=True)
class RecapLine:
    """One message of a thread as the model sees it: its ref (what the model cites), time, author's name, words
    (mentions written as names); whether it is among the thread's most central, looks like a decision, or asks
    something nobody answered."""

    ref: int
    timestamp: datetime
    author: str
    content: str
    key: bool = False
    decides: bool = False
    open_question: bool = False


@dataclass(frozen=True, slots=True)
class RecapThread:
    """One thread of conversation: its number, a title of its most telling words, who took part, how many
    messages it had in the span, and the lines of it that fit the budget (in time order)."""

    number: int
    title: str
    people: tuple[str, ...]
    messages: int
    lines: tuple[RecapLine, ...]
    minor: bool = False  # a lone remark or a few words of banter: the model may skip it, the extract does


@dataclass(frozen=True, slots=True)
class RecapDay:
    """A member's summary of a whole past day of the span."""

    day: date
    author: str
    summary: str


def line_xml(line: RecapLine) -> str:
    """One message as the model reads it: `<m ref="3" key="1" at="2026-11-20 09:28" by="Ana">words</m>` (a short form:
    the markup of every line is paid for in the budget). Names and words are escaped, in attributes too."""
    key = KEY if line.key else ""
    at = line.timestamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    return f'<m ref="{line.ref}"{key} at="{at}" by={quoteattr(clean(line.author))}>{xml_text(line.content)}</m>'


def thread_open(number: int, messages: int, people: Sequence[str]) -> str:
    """A thread's opening tag and who took part."""
    return f'<thread number="{number}" messages="{messages}"><people>{xml_text(", ".join(people))}</people>'


def threads_xml(threads: Sequence[RecapThread]) -> str:
    """The threads as escaped XML elements."""
    return "\n".join(
        "\n".join([thread_open(t.number, t.messages, t.people), *(line_xml(line) for line in t.lines), "</thread>"])
        for t in threads
    )


def days_xml(days: Sequence[RecapDay]) -> str:
    """Summaries of past days as escaped XML elements."""
    return "\n".join(
        f'<day date="{d.day.isoformat()}"><author>{xml_text(d.author)}</author>'
        f"<summary>{xml_text(d.summary)}</summary></day>"
        for d in days
    )


def extractive(threads: Sequence[RecapThread]) -> Recap:
    """The recap without a model: for each thread worth telling (the minor ones only when nothing else is), its
    central messages quoted by author, what looks decided, what was asked and left open, and their refs."""
    told = [t for t in threads if not t.minor] or list(threads[:1])
    return Recap(threads=[_extract(thread) for thread in told[:THREADS_TOLD]])


def _extract(thread: RecapThread) -> RecapItem:
    keys = [line for line in thread.lines if line.key][:KEYS_TOLD] or list(thread.lines[:1])
    quoted = "; ".join(f"{line.author}: “{_quote(line.content)}”" for line in keys[:2])
    others = len(thread.people) - 2
    who = (
        " and ".join(thread.people)
        if others <= 0
        else f"{', '.join(thread.people[:2])} and {others} other{'s' if others > 1 else ''}"
    )
    count = f"{thread.messages} message{'s' if thread.messages != 1 else ''}"
    return RecapItem(
        thread=thread.number,
        title=thread.title,
        summary=f"{who} ({count}). {quoted}",
        decisions=[_quote(_DECIDED.sub("", line.content)) for line in thread.lines if line.decides][-FLAGGED_TOLD:],
        open_questions=[_quote(line.content) for line in thread.lines if line.open_question][-FLAGGED_TOLD:],
        refs=[line.ref for line in keys],
    )


def _quote(text: str) -> str:
    return trim_to_chars(text, QUOTE_CHARS)
