"""Scoring an answer against its gold answer, SQuAD style, and summing the scores up per question type.

Both texts are normalised first (lower case, punctuation and the articles a / an / the removed, whitespace
collapsed). Exact match: the normalised texts are equal. Token F1: the harmonic mean of the share of the answer's
tokens found in the gold answer and the share of the gold answer's tokens found in the answer (counted with
repeats). A third, looser figure suits a chatty reply: whether the normalised gold answer appears in the normalised
answer as a whole run of tokens ("contains").
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation + "“”‘’…–—")  # typographic marks too
OVERALL = "overall"


def normalise(text: str) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (SQuAD's normalisation)."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, gold: str) -> float:
    """1.0 when the normalised answer is the normalised gold answer, else 0.0."""
    return float(normalise(answer) == normalise(gold))


def token_f1(answer: str, gold: str) -> float:
    """SQuAD's token F1 of the normalised texts (0.0 when either is empty and they differ)."""
    said, wanted = normalise(answer).split(), normalise(gold).split()
    if not said or not wanted:
        return float(said == wanted)
    common = sum((Counter(said) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, recall = common / len(said), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def contains(answer: str, gold: str) -> float:
    """1.0 when the normalised gold answer appears in the normalised answer as whole tokens."""
    wanted = normalise(gold)
    return float(bool(wanted) and f" {wanted} " in f" {normalise(answer)} ")


@dataclass(frozen=True)
class Scored:
    """One answer with its scores; `judged` is the judge's verdict (None: no judge, or it failed)."""

    qtype: str
    answer: str
    f1: float
    em: float
    contained: float
    judged: bool | None = None


def score(qtype: str, answer: str, gold: str, judged: bool | None = None) -> Scored:
    """Every automatic score of one answer."""
    return Scored(qtype, answer, token_f1(answer, gold), exact_match(answer, gold), contains(answer, gold), judged)


@dataclass
class Figures:
    """Averages over a group of answers (a question type, or all of them)."""

    count: int = 0
    f1: float = 0.0
    em: float = 0.0
    contained: float = 0.0
    judge: float | None = None  # share judged correct, of the answers the judge ruled on
    judged: int = 0


@dataclass
class Tally:
    """Every answer of one path (the reply path, or the full-context baseline), grouped per question type."""

    scored: list[Scored] = field(default_factory=list)

    def add(self, scored: Scored) -> None:
        self.scored.append(scored)

    def figures(self, keys: Callable[[str], Iterable[str]] = lambda qtype: (qtype, OVERALL)) -> dict[str, Figures]:
        """The mean of each score per group an answer counts in (`keys` of its question type: by default the type
        and "overall")."""
        groups: dict[str, list[Scored]] = defaultdict(list)
        for s in self.scored:
            for key in keys(s.qtype):
                groups[key].append(s)
        return {key: _mean(items) for key, items in groups.items()}


def _mean(items: Sequence[Scored]) -> Figures:
    n = len(items)
    verdicts = [s.judged for s in items if s.judged is not None]
    return Figures(
        n,
        sum(s.f1 for s in items) / n,
        sum(s.em for s in items) / n,
        sum(s.contained for s in items) / n,
        sum(verdicts) / len(verdicts) if verdicts else None,
        len(verdicts),
    )


def percentile(values: Iterable[float], share: float) -> float:
    """The nearest-rank percentile (`share` 0.5 the median, 0.99 the p99); 0.0 of nothing."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]
