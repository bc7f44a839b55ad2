"""Plain-text helpers every layer shares: mentions, cleaning hostile text, words and stems, clauses.

Nothing here knows about Discord, the database or a model, so the front ends, the memory layer and the
offline provider can all use it.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

from db.records import clean

__all__ = ["MENTION", "STOPWORDS", "WORD", "clean", "content_stems", "remove_statement", "states", "stem"]

MENTION = re.compile(r"<@!?(\d{15,20})>")
WORD = re.compile(r"\w+", re.UNICODE)
_STEMMER = snowballstemmer.stemmer("english")

# Words that carry no content of their own: pronouns, auxiliaries, question scaffolding and time words.
STOPWORDS = frozenset(
    """
a about above after again against ago all also am an and any anybody anyone are as at be because been before
being below between both but by can could day days did do does doing done down during each else ever few for
from further get gets got go goes going went had has have having he her here hers herself him himself his
how i if in into is it its itself
just know last me mention mentioned month months more most my myself no nor not now of off on once only or
other our ours ourselves out over own recall remember said same say says she should so some somebody someone
such talk talked tell than that the their theirs them themselves then there these they this those through
time to today told too under until up us very was we week weeks were what when where which while who whom why
will with would year years yesterday you your yours yourself yourselves
""".split()
)


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """The Snowball stem; cached, since chat repeats its words all day (PyStemmer's C stemmer behind
    snowballstemmer takes ~1 µs a word, the pure-Python one 28)."""
    return _STEMMER.stemWord(word)


def content_stems(text: str, *, drop: frozenset[str] = frozenset()) -> set[str]:
    """Stems of the words that say something (no stopwords, no words in `drop`, e.g. the subject's name)."""
    return {stem(w) for w in WORD.findall(text.casefold()) if len(w) > 1 and w not in STOPWORDS and w not in drop}


def _same_word(a: str, b: str) -> bool:
    # Stems of one word family can differ ("allergic" → allerg, "allergy" → allergi): a shared start of four
    # letters or more, one stem being the start of the other, counts as the same word.
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def states(text: str, target: set[str]) -> bool:
    """Whether `text` contains every content stem of `target` (a statement to forget)."""
    if not target:
        return False
    stems = content_stems(text)
    return all(t in stems or any(_same_word(t, s) for s in stems) for t in target)


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSE = re.compile(r",?\s+(?:and|but|while|plus|also)\s+|,\s+|\s+-\s+", re.I)


def _clauses(sentence: str) -> list[str]:
    return [part for part in _CLAUSE.split(sentence) if part.strip()]


def remove_statement(text: str, target: set[str], *, subject: str = "") -> tuple[bool, str]:
    """Remove the clauses of `text` that state `target` (all its content stems present), keeping the rest.

    A sentence whose clauses only state it together goes whole. When a sentence's first clause goes and it
    began with `subject` ("alice lives in Lisbon and likes tea"), the rest keeps the subject ("alice likes
    tea"). Returns whether anything was removed, and what remains.
    """
    if not target:
        return False, text
    kept_sentences: list[str] = []
    removed = False
    for sentence in (s for s in _SENTENCE_END.split(text.strip()) if s.strip()):
        if not states(sentence, target):
            kept_sentences.append(sentence)
            continue
        removed = True
        clauses = _clauses(sentence.rstrip(".!?; "))
        hit = [states(c, target) for c in clauses]
        if not any(hit) or all(hit):
            continue  # stated across its clauses, or in all of them: the sentence goes
        rest = [c.strip() for c, h in zip(clauses, hit, strict=True) if not h]
        if hit[0]:
            starts_with_subject = subject and clauses[0].casefold().startswith(subject.casefold())
            if starts_with_subject and not rest[0].casefold().startswith(subject.casefold()):
                rest[0] = f"{subject} {rest[0]}"
            elif not starts_with_subject:
                rest[0] = rest[0][:1].upper() + rest[0][1:]
        joined = rest[0] if len(rest) == 1 else ", ".join(rest[:-1]) + " and " + rest[-1]
        end = sentence.rstrip()[-1] if sentence.rstrip()[-1:] in ".!?" else "."
        kept_sentences.append(joined + end)
    return removed, " ".join(kept_sentences) if removed else text
