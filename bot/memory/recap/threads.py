"""Threads of conversation in a span of messages, each with its most central messages: deterministic, no model.

A busy channel carries several conversations at once. A message joins the thread it replies to; otherwise the
open thread of its channel that shares most of its telling words (weighted by how rare each word is in the span),
if it shares enough; a few words of reaction ("lol", "same!") join the channel's latest thread; anything else
opens a new one. A thread closes after GAP without a message, and what it is about is what its opener and its
latest messages say. Within a thread, a message is central when it holds
much of the vocabulary the others share, when others reply to it, when it opens the thread or settles something.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.text import MENTION, STOPWORDS, WORD, stem
from db.search.types import Turn

GAP = timedelta(hours=1)  # a thread with no message for this long is over
RECENT = 6  # a message is compared with what the thread's opener and its latest messages say
JOIN = 0.25  # the share of a message's weight a thread must already hold for the message to join it
KIN = 0.2  # a thread other than the one at hand holding this much of a message's words keeps it from answering
REACTION_WORDS = 2  # a message with at most this many telling words is a reaction to the conversation at hand
REACTION_GAP = timedelta(minutes=3)
ADJACENT = timedelta(minutes=3)  # an answer this soon after the channel's last message is likely to it
ANSWER_WORDS = 3
QUESTION_OPEN = timedelta(minutes=10)  # a thread opened by a question takes a first answer this long
# Words that open a new conversation rather than answer the one at hand.
OPENS = re.compile(
    r"^(?:btw|by the way|anyway|also|unrelated|random(?:ly)?|question|quick question|psa|heads up|news|"
    r"(?:has|does|did|is)\s+any(?:one|body)|any(?:one|body)|who(?:'s| is| wants)|guys|hey (?:all|everyone)|"
    r"so,? (?:about|what about))\b",
    re.I,
)
KEYS = 3  # central messages marked per thread
SHARED = 4  # a word's weight counts for a thread this many times at most
SETTLED = 30.0  # what a decision adds to a thread's heft (two at most): what a recap is asked for first
DECIDES = re.compile(
    r"\b(?:decided|decision|agreed|agree on|settled|let'?s (?:go with|do|make it|pick|use|meet)|going with|"
    r"we'?ll (?:go|do|use|meet|have|make|start|move)|it'?s (?:set|decided|settled|a deal)|deal\b|confirmed|"
    r"locked in|final(?:ly)?\s*[:,-])",
    re.I,
)


@dataclass
class Thread:
    """One conversation: its messages in time order, and the words it has used so far."""

    channel_id: int
    turns: list[Turn] = field(default_factory=list)
    words: Counter[str] = field(default_factory=Counter)  # stem -> messages of the thread holding it
    said: list[set[str]] = field(default_factory=list)  # each message's stems
    members: set[int] = field(default_factory=set)  # who took part

    @property
    def talking_of(self) -> set[str]:
        """What the thread is about now: its opener's words and its latest messages' (a long thread drifts, and a
        thread holding every word of a day would draw every message in)."""
        return self.said[0].union(*self.said[-RECENT:]) if self.said else set()

    @property
    def started(self) -> datetime:
        return self.turns[0].at

    @property
    def last(self) -> datetime:
        return self.turns[-1].at

    @property
    def people(self) -> list[int]:
        """Who took part, in the order they first spoke."""
        return list(dict.fromkeys(t.user_id for t in self.turns))

    def add(self, turn: Turn, stems: set[str]) -> None:
        self.turns.append(turn)
        self.words.update(stems)
        self.said.append(stems)
        self.members.add(turn.user_id)


# Chat's filler: words that say how, not what ("yes please, sounds good").
FILLER = frozenset(
    "please pls plz thanks thank thx ty yeah yes yep yup no nope nah ok okay sure lol haha lmao oh ah hmm well "
    "like really just maybe think guess sounds good great cool nice".split()
)


def stems_of(text: str, *, drop: frozenset[str] = frozenset()) -> set[str]:
    """The telling words of a message, stemmed: mentions and the words in `drop` (members' names) say who, not what."""
    plain = MENTION.sub(" ", text).casefold()
    return {
        stem(w)
        for w in WORD.findall(plain)
        if len(w) > 1 and w not in STOPWORDS and w not in FILLER and w not in drop and not w.isdigit()
    }


class Weights:
    """How telling each word is in the span: rare words a lot, words every conversation uses little (idf)."""

    def __init__(self, said: Iterable[set[str]]) -> None:
        counts: Counter[str] = Counter()
        total = 0
        for stems in said:
            counts.update(stems)
            total += 1
        self._idf = {word: math.log((1 + total) / (1 + n)) + 1 for word, n in counts.items()}
        self._unseen = math.log(1 + total) + 1

    def __call__(self, word: str) -> float:
        return self._idf.get(word, self._unseen)


def segment(turns: list[Turn], *, names: Iterable[str] = ()) -> tuple[list[Thread], Weights]:
    """The threads of `turns` (oldest first), in the order they began, and the words' weights in the span; `names`:
    members' names, which say who, not what ("Rui, check your dms", "thanks Mira!")."""
    drop = _name_words(names)
    said = [stems_of(t.text, drop=drop) for t in turns]
    weight = Weights(said)
    threads: list[Thread] = []
    of_message: dict[int, Thread] = {}
    going: dict[int, list[Thread]] = {}  # channel -> its threads not over yet, the latest one last
    for turn, stems in zip(turns, said, strict=True):
        here = going.setdefault(turn.channel_id, [])
        here[:] = [t for t in here if turn.at - t.last <= GAP]
        thread = _thread_for(turn, stems, here, of_message, weight)
        if thread is None:
            thread = Thread(turn.channel_id)
            threads.append(thread)
        elif thread in here:
            here.remove(thread)
        thread.add(turn, stems)
        here.append(thread)
        of_message[turn.message_id] = thread
    return threads, weight


def _name_words(names: Iterable[str]) -> frozenset[str]:
    return frozenset(w for name in names for w in WORD.findall(name.casefold()) if len(w) > 1)


def _thread_for(
    turn: Turn, stems: set[str], going: list[Thread], of_message: dict[int, Thread], weight: Weights
) -> Thread | None:
    """The thread a message continues (among its channel's threads still going, the latest last), or None."""
    if turn.reply_to_id is not None and (replied := of_message.get(turn.reply_to_id)) is not None:
        return replied
    current = going[-1] if going else None
    total = sum(weight(s) for s in stems) or 1.0
    named = {int(m) for m in MENTION.findall(turn.text)}
    best, best_share, kin = None, 0.0, 0.0
    for thread in going:  # what it says first: the thread that already holds most of its words
        about = thread.talking_of
        words = sum(weight(s) for s in stems if s in about) / total
        kin = max(kin, words if thread is not current else 0.0)
        share = words + (0.1 if thread is current else 0.0)  # the conversation at hand, by a little
        share += 0.1 if named and named & thread.members else 0.0
        if share > best_share:
            best, best_share = thread, share
    if best is not None and stems and best_share >= JOIN:
        return best
    if current is None or kin >= KIN or OPENS.match(MENTION.sub(" ", turn.text).strip()):
        return None  # "btw, …", "anyone …?", or words of another conversation: no answer to this one
    last = current.turns[-1]
    if len(stems) <= REACTION_WORDS and turn.at - last.at <= REACTION_GAP:
        return current  # "lol", "same!": a reaction to the conversation at hand
    # An answer: right after the conversation's last message, from someone else, when that asked something or this
    # says little ("me! double elimination please"); or soon after a question someone opened a thread with.
    answers = turn.at - last.at <= ADJACENT and last.user_id != turn.user_id
    if answers and (last.text.rstrip().endswith("?") or len(stems) <= ANSWER_WORDS):
        return current
    asked = [
        t
        for t in going
        if t.turns[0].text.rstrip().endswith("?")
        and t.turns[0].user_id != turn.user_id
        and turn.at - t.started <= QUESTION_OPEN
        and len(t.members) == 1  # nobody has answered yet
    ]
    return asked[-1] if asked else None


def centrality(thread: Thread, weight: Weights) -> dict[int, float]:
    """How central each message of a thread is (message id -> score)."""
    replies = Counter(t.reply_to_id for t in thread.turns if t.reply_to_id is not None)
    others = max(1, len(thread.turns) - 1)
    scores = {}
    for index, (turn, stems) in enumerate(zip(thread.turns, thread.said, strict=True)):
        shared = sum(weight(s) * (thread.words[s] - 1) for s in stems) / others  # what the others also say
        own = sum(weight(s) for s in stems) ** 0.5  # a message that says something, not a long one
        score = shared + 0.3 * own + 1.0 * replies[turn.message_id]
        score += 1.0 if index == 0 and len(thread.turns) > 1 else 0.0  # who opened it
        score += 1.5 if DECIDES.search(turn.text) else 0.0
        scores[turn.message_id] = score
    return scores


def keys(thread: Thread, scores: dict[int, float]) -> list[int]:
    """The thread's KEYS most central messages (ids), most central first."""
    ranked = sorted(thread.turns, key=lambda t: (-scores[t.message_id], t.at))
    return [t.message_id for t in ranked[:KEYS]]


def heft(thread: Thread, weight: Weights, repeats: set[int]) -> float:
    """How much a thread says: the words its messages share (what it is about, each counted up to SHARED times, a
    message repeating an earlier one of the span saying nothing new), what it settles, more with more people."""
    counts: Counter[str] = Counter()
    for turn, stems in zip(thread.turns, thread.said, strict=True):
        if turn.message_id not in repeats:
            counts.update(stems)
    shared = sum(weight(s) * min(n, SHARED) for s, n in counts.items() if n >= 2)
    settled = min(2, sum(1 for t in thread.turns if DECIDES.search(t.text)))
    return (shared + SETTLED * settled) * (1 + 0.25 * min(len(thread.people) - 1, 3))


def repeats(turns: Iterable[Turn], *, names: Iterable[str] = ()) -> set[int]:
    """Messages that say again what was said before them in the span, word for word or all but one word ("night
    all!", "is Arcane worth starting?" after "is Severance worth starting?"): templated chatter, no news."""
    drop = _name_words(names)
    seen: set[frozenset[str]] = set()
    again = set()
    for turn in turns:
        said = frozenset(stems_of(turn.text, drop=drop)) or frozenset(WORD.findall(turn.text.casefold()))
        near = {said} | ({said - {word} for word in said} if len(said) >= 3 else set())
        if near & seen:
            again.add(turn.message_id)
        seen |= near
    return again


def minor(thread: Thread) -> bool:
    """Greetings and reactions, nothing more ("gm", "morning!", "lol"): told only if nothing else is."""
    return all(len(stems) <= REACTION_WORDS for stems in thread.said)


def open_questions(thread: Thread) -> set[int]:
    """Questions in a thread that nobody answered: no reply to them, and no one else spoke in it after them."""
    replied = {t.reply_to_id for t in thread.turns}
    found = set()
    for index, turn in enumerate(thread.turns):
        if not turn.text.rstrip().endswith("?") or turn.message_id in replied:
            continue
        if all(later.user_id == turn.user_id for later in thread.turns[index + 1 :]):
            found.add(turn.message_id)
    return found


def title(thread: Thread, weight: Weights, *, words: int = 3) -> str:
    """The thread's most telling words, as people wrote them ("tournament, bracket, saturday")."""
    forms: dict[str, Counter[str]] = {}  # in the order the thread first used them: ties go to the earlier word
    for turn in thread.turns:
        for word in WORD.findall(MENTION.sub(" ", turn.text).casefold()):
            if len(word) > 1 and word not in STOPWORDS and not word.isdigit():
                forms.setdefault(stem(word), Counter())[word] += 1
    first = {s: i for i, s in enumerate(forms)}
    ranked = sorted(thread.words, key=lambda s: (-thread.words[s] * weight(s), first.get(s, len(first))))
    shown = [forms[s].most_common(1)[0][0] for s in ranked[:words] if s in forms]
    return ", ".join(shown) or "a few words"


def about(thread: Thread, topic: Iterable[str]) -> bool:
    """Whether a thread bears on a topic's words (any of them, as stems)."""
    return any(stem(word) in thread.words for word in topic)
