"""What a recap is made from: the span's threads packed into the token budget, with the summaries of whole past
days, the refs the model cites, and the provenance of it all.

Every thread first gets its most central messages, the biggest thread first; what is left of the budget goes round
the threads again, one message each, the most central first, until nothing more fits. Whole past days of a
server-wide recap also bring their members' daily summaries, in at most a third of the budget (newest first): a
span longer than the messages the budget holds is still told whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.llm.recap import RecapDay, RecapLine, RecapThread, days_xml, extractive, line_xml, thread_open, threads_xml
from bot.llm.schemas import Recap
from bot.llm.tokens import estimate_tokens, trim_to_chars
from bot.memory.names import unnamed
from bot.memory.recap import threads as threading
from bot.memory.recap.threads import Thread, Weights
from bot.text import MENTION
from db.search.types import Turn

LINE_CHARS = 500  # a long message is cut: the recap needs what it is about, not all of it
DAY_MARKUP = 15
DAYS_SHARE = 3  # past days' summaries take at most 1/DAYS_SHARE of the budget


@dataclass(frozen=True)
class Material:
    """A recap's input and how it was chosen: what it is about (a channel, or None: the server), the span and
    how it was chosen ("named", "here": since the asker last spoke in the channel, "server": in the server,
    "longest": the longest span a recap covers), whether the span was cut to that longest, the topic, how many
    messages the span held, the threads and days packed for the model, the messages each ref stands for, and
    whose data and which messages the recap carries."""

    guild_id: int
    channel_id: int | None
    since: datetime
    until: datetime
    chosen: str
    label: str = ""
    capped: bool = False
    topic: tuple[str, ...] = ()
    said: int = 0
    threads: tuple[RecapThread, ...] = ()
    days: tuple[RecapDay, ...] = ()
    sources: Mapping[int, Turn] = field(default_factory=dict)
    members: frozenset[int] = frozenset()
    quoted: frozenset[int] = frozenset()
    raw_tokens: int = 0  # the span's messages read whole, for comparison (bench.recap)

    @property
    def empty(self) -> bool:
        """Nothing to recap: no message of the span (about the topic), no day's summary."""
        return not self.threads and not self.days

    @property
    def extract(self) -> Recap:
        """The recap without a model (bot/llm/recap.py)."""
        return extractive(self.threads)

    def variables(self, bot_name: str) -> dict[str, object]:
        """The `recap` prompt's variables (the structured threads too, for the offline provider)."""
        return {
            "bot_name": bot_name,
            "topic": " ".join(self.topic),
            "days_xml": days_xml(self.days),
            "threads_xml": threads_xml(self.threads),
            "threads": self.threads,
        }

    @property
    def digest(self) -> str:
        """What the model would receive, as a key: equal input, equal recap (a later ask over the same messages
        and summaries, whatever moment it names as "now", is the same recap)."""
        text = "\x1f".join((" ".join(self.topic), days_xml(self.days), threads_xml(self.threads)))
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


@dataclass
class _Packing:
    budget: int
    opening: list[int]  # each thread's opening tag and people, paid with its first line
    used: int = 0
    chosen: dict[int, list[Turn]] = field(default_factory=dict)  # thread index -> its lines

    def take(self, index: int, turn: Turn, cost: int) -> bool:
        cost += 0 if index in self.chosen else self.opening[index]
        if self.used + cost > self.budget:
            return False
        self.used += cost
        self.chosen.setdefault(index, []).append(turn)
        return True


def line_tokens(turn: Turn, names: Mapping[int, str]) -> int:
    """Tokens a message takes in the prompt, markup and all (its ref counted at four digits)."""
    line = RecapLine(9999, turn.at, names.get(turn.user_id, unnamed(turn.user_id)), line_text(turn.text, names), True)
    return estimate_tokens(line_xml(line)) + 1  # and its line break


def _opening(thread: Thread, names: Mapping[int, str]) -> int:
    people = [names.get(p, unnamed(p)) for p in thread.people]
    return estimate_tokens(thread_open(999, len(thread.turns), people) + "</thread>") + 2


def line_text(text: str, names: Mapping[int, str]) -> str:
    """A message as the model reads it: mentions as names (nothing that pings), cut to LINE_CHARS."""
    named = MENTION.sub(lambda m: "@" + names.get(int(m.group(1)), unnamed(int(m.group(1)))), text)
    return trim_to_chars(named, LINE_CHARS)


def from_span(
    turns: Sequence[Turn], names: Mapping[int, str], *, topic: Sequence[str], budget: int
) -> tuple[list[RecapThread], dict[int, Turn], int, int]:
    """A span's threads (about `topic`, if any), the biggest first, packed into `budget`: the threads, what each
    ref stands for, how many messages the threads hold, and the tokens of reading the span whole."""
    found, weight = threading.segment(list(turns), names=names.values())
    if topic:
        found = [t for t in found if threading.about(t, topic)]
    again = threading.repeats(turns, names=names.values())
    found.sort(key=lambda t: (-threading.heft(t, weight, again), t.started))
    told, sources = pack(found, weight, names, budget=budget)
    return told, sources, sum(len(t.turns) for t in found), raw_tokens(turns, names)


def pack(
    threads: Sequence[Thread],
    weight: Weights,
    names: Mapping[int, str],
    *,
    budget: int,
) -> tuple[list[RecapThread], dict[int, Turn]]:
    """The threads (biggest first) packed into `budget` tokens: key messages of each first, then round the threads
    one message at a time; the refs number the lines in the order they are shown."""
    scores = [threading.centrality(t, weight) for t in threads]
    order = [_by_centrality(t, s) for t, s in zip(threads, scores, strict=True)]
    cost = {turn.message_id: line_tokens(turn, names) for t in threads for turn in t.turns}
    packing = _Packing(budget, [_opening(t, names) for t in threads])
    keys = [set(threading.keys(t, s)) for t, s in zip(threads, scores, strict=True)]
    for index in range(len(threads)):
        for turn in order[index][: len(keys[index])]:
            packing.take(index, turn, cost[turn.message_id])
    taken = {t.message_id for lines in packing.chosen.values() for t in lines}
    rest = [[t for t in o if t.message_id not in taken] for o in order]
    progressed = True
    while progressed:  # round the threads, one more line each, until none fits
        progressed = False
        for index, waiting in enumerate(rest):
            while waiting:
                turn = waiting.pop(0)
                if packing.take(index, turn, cost[turn.message_id]):
                    progressed = True
                    break
    return _numbered(threads, packing, keys, weight, names)


def _by_centrality(thread: Thread, scores: Mapping[int, float]) -> list[Turn]:
    return sorted(thread.turns, key=lambda turn: (-scores[turn.message_id], turn.at))


def _numbered(
    threads: Sequence[Thread],
    packing: _Packing,
    keys: list[set[int]],
    weight: Weights,
    names: Mapping[int, str],
) -> tuple[list[RecapThread], dict[int, Turn]]:
    told: list[RecapThread] = []
    sources: dict[int, Turn] = {}
    for index, thread in enumerate(threads):
        lines = sorted(packing.chosen.get(index, []), key=lambda t: (t.at, t.message_id))
        if not lines:
            continue
        unanswered = threading.open_questions(thread)
        shown = []
        for turn in lines:
            ref = len(sources) + 1
            sources[ref] = turn
            shown.append(
                RecapLine(
                    ref,
                    turn.at,
                    names.get(turn.user_id, unnamed(turn.user_id)),
                    line_text(turn.text, names),
                    key=turn.message_id in keys[index],
                    decides=bool(threading.DECIDES.search(turn.text)),
                    open_question=turn.message_id in unanswered,
                )
            )
        people = tuple(names.get(p, unnamed(p)) for p in thread.people)
        told.append(
            RecapThread(
                len(told) + 1,
                threading.title(thread, weight),
                people,
                len(thread.turns),
                tuple(shown),
                minor=threading.minor(thread),
            )
        )
    return told, sources


def pack_days(
    days: Sequence[tuple[date, Mapping[int, str]]], names: Mapping[int, str], *, budget: int
) -> list[RecapDay]:
    """Past days' summaries (newest day first) within `budget` tokens, shown oldest first."""
    kept: list[RecapDay] = []
    used = 0
    for day, summaries in days:
        for user_id, text in sorted(summaries.items()):
            if not text.strip():
                continue
            entry = RecapDay(day, names.get(user_id, unnamed(user_id)), text.strip())
            cost = estimate_tokens(entry.summary) + DAY_MARKUP
            if used + cost > budget:
                return sorted(kept, key=lambda d: d.day)
            used += cost
            kept.append(entry)
    return sorted(kept, key=lambda d: d.day)


def days_tokens(days: Sequence[RecapDay]) -> int:
    """Tokens the days' summaries take of the budget."""
    return sum(estimate_tokens(d.summary) + DAY_MARKUP for d in days)


def raw_tokens(turns: Sequence[Turn], names: Mapping[int, str]) -> int:
    """Tokens of reading the span's messages whole, each as a line of the prompt."""
    return sum(line_tokens(t, names) for t in turns)
