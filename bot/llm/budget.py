"""Fitting memory into a token budget: sections with shares and priorities, never over the budget.

Facts are guaranteed (they are what people asked the bot to keep, and capped at FACTS_MAX_CHARS anyway).
Every other section first gets up to its share of the budget; what a section does not need goes to the
next ones in priority order. Text sections keep their start (summaries put the gist first) or their end
(histories are oldest-first, so the newest survives); list sections (recalled snippets, best first) drop
whole items from the end rather than cutting one in half.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bot.llm.tokens import estimate_tokens, trim_to_tokens


@dataclass(frozen=True)
class Section:
    """One labelled part of the context."""

    label: str
    text: str = ""
    items: list[str] = field(default_factory=list)
    share: float = 0.0
    guaranteed: bool = False
    keep: Literal["start", "end"] = "start"

    def render(self, tokens: int) -> str:
        """The section within `tokens`, or "" when nothing useful fits."""
        if tokens <= 0 or not self.wanted():
            return ""
        if self.items:
            lines = [f"{self.label}:"]
            for item in self.items:
                candidate = "\n".join([*lines, f"- {item}"])
                if estimate_tokens(candidate) > tokens:
                    break
                lines.append(f"- {item}")
            return "\n".join(lines) if len(lines) > 1 else ""
        head = f"{self.label}: "
        room = tokens - estimate_tokens(head)
        if room <= 0:
            return ""
        body = trim_to_tokens(self.text.strip(), room, keep=self.keep)
        return head + body if body else ""

    def wanted(self) -> bool:
        return bool(self.text.strip() or self.items)

    def need(self) -> int:
        """Tokens the whole section would take."""
        if self.items:
            return estimate_tokens("\n".join([f"{self.label}:", *(f"- {i}" for i in self.items)]))
        body = self.text.strip()
        return estimate_tokens(f"{self.label}: ") + estimate_tokens(body) if body else 0


def assemble(sections: list[Section], budget: int) -> str:
    """Sections in the given (priority) order, joined by newlines, at most `budget` tokens in total."""
    present = [s for s in sections if s.wanted()]
    if not present or budget <= 0:
        return ""
    room = budget - (len(present) - 1)  # one token for each newline between sections
    allot = {id(s): min(s.need(), room) for s in present if s.guaranteed}
    guaranteed = sum(allot.values())
    if guaranteed > room:  # only facts longer than the whole budget: they still lead, trimmed
        allot = {id(s): room if s.guaranteed and s is present[0] else 0 for s in present}
    shared = max(0, room - guaranteed)  # shares are of what the guaranteed sections leave
    for s in present:
        allot.setdefault(id(s), min(s.need(), int(s.share * shared)))
    left = room - sum(allot.values())
    for s in present:  # what others did not need, in priority order
        extra = min(max(0, s.need() - allot[id(s)]), max(0, left))
        allot[id(s)] += extra
        left -= extra
    parts = [part for s in present if (part := s.render(allot[id(s)]))]
    text = "\n".join(parts)
    while parts and estimate_tokens(text) > budget:  # defensive: estimates of parts and whole agree
        parts.pop()
        text = "\n".join(parts)
    return text


def memory_sections(
    facts: str, today: str, history: str, earlier: str = "", recalled: list[str] | None = None
) -> list[Section]:
    """The context's sections in priority order, with their shares of the budget."""
    return [
        Section("Facts", facts, guaranteed=True),
        Section("Today", today, share=0.3),
        Section("Last week", history, share=0.25, keep="end"),
        Section("Recalled", items=list(recalled or []), share=0.25),
        Section("Earlier", earlier, share=0.2, keep="end"),
    ]


def with_facts(facts: str, note: str, budget: int) -> str:
    """A model's merged note within the budget, the facts guaranteed verbatim.

    The model is asked not to repeat the facts; if it did anyway (or is the offline merge, which starts with
    them), the note is kept as it is when it fits. Otherwise the facts lead and the note gets what is left.
    """
    squash = " ".join(facts.split())
    if not squash or (squash in " ".join(note.split()) and estimate_tokens(note) <= budget):
        return trim_to_tokens(note.strip(), budget)
    return assemble([Section("Facts", facts, guaranteed=True), Section("Notes", note, share=1.0)], budget)
