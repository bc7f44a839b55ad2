"""Planting the stories (`bench.conversation_stories`) in the benchmark guild: evidence inside small chat scenes,
look-alike distractors, and one question per story instance, all drawn from the seed alone."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench import conversation_filler as filler
from bench.conversation_guild import (
    CHANNEL_WEIGHTS,
    GUILD_ID,
    MAX_AGE_DAYS,
    MIN_AGE_DAYS,
    MONTHS,
    NAMES,
    NOW,
    START,
    Channel,
    Member,
    Message,
    Question,
    at_hour,
    content_words,
    day_at_age,
    snowflake,
)
from bench.conversation_stories import KINDS, Kind

INSTANCES_PER_KIND = 4
OVERLAP_FREE = frozenset({"paraphrase", "spread", "answered_by_other"})  # questions share no word with the evidence
INTERRUPTED = frozenset({"next_turn", "answered_by_other"})  # someone may talk between the question and the answer
QUESTION_PREFIXES = ("", "", "", "", "hey elefant, ", "@Elefant ", "quick q: ", "elefant ", "random q but ")


def when_phrase(ts: datetime, rng: random.Random) -> tuple[str, datetime, datetime]:
    """A natural time expression for `ts` as seen from NOW, and the window it covers."""
    age = (NOW - ts).days
    options: list[tuple[str, datetime, datetime]] = []
    if ts.month != NOW.month:
        lo = ts.replace(day=1, hour=0, minute=0, second=0)
        hi = (lo + timedelta(days=32)).replace(day=1)
        month = MONTHS[ts.month - 1]
        options += [(f"in {month}", lo, hi), (f"back in {month}", lo, hi), (f"last {month}", lo, hi)]
    months = round(age / 30.44)
    if 2 <= months <= 11 and abs(age - months * 30.44) < 8:
        lo, hi = NOW - timedelta(days=(months + 0.5) * 30.44), NOW - timedelta(days=(months - 0.5) * 30.44)
        options.append((f"about {months} months ago", lo, hi))
        options.append((f"{months} months back", lo, hi))
    if (ts.month, ts.day) >= (12, 18) or (ts.month, ts.day) <= (1, 3):
        year = ts.year if ts.month == 12 else ts.year - 1
        options.append(("over christmas", datetime(year, 12, 18, tzinfo=UTC), datetime(year + 1, 1, 4, tzinfo=UTC)))
    if ts.month in (6, 7, 8) and ts.year == NOW.year:
        options.append(("last summer", datetime(ts.year, 6, 1, tzinfo=UTC), datetime(ts.year, 9, 1, tzinfo=UTC)))
    if ts.month in (3, 4, 5) and ts.year == NOW.year:
        options.append(("in the spring", datetime(ts.year, 3, 1, tzinfo=UTC), datetime(ts.year, 6, 1, tzinfo=UTC)))
    if not options:  # the current month a year ago
        options.append(("about a year ago", NOW - timedelta(days=400), NOW - timedelta(days=330)))
    return rng.choice(options)


@dataclass
class _Draft:
    """A planted message before its id is known; `reply_to` indexes the same list."""

    ts: datetime
    channel: str
    author: str
    text: str
    role: str
    reply_to: int | None = None


_PREFIX = re.compile(r"\*?\^?[SABX]: ")


class Planter:
    """Turns the story kinds into drafted messages and questions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.drafts: list[_Draft] = []
        self.questions: list[tuple[Kind, str, str, list[int], str, str]] = []  # kind, subject, text, evidence...

    def others(self, *exclude: str) -> list[str]:
        return [n for n in NAMES if n not in exclude]

    def scene(
        self,
        kind: Kind,
        lines: tuple[str, ...],
        start: datetime,
        names: dict[str, str],
        slots: dict,
        *,
        channel: str = "",
    ) -> list:
        """Draft one scene (in `channel`, or the kind's); returns the indexes of its evidence lines."""
        rng, evidence = self.rng, []
        by_template: dict[int, int] = {}
        ts = start
        expanded = list(enumerate(lines))
        if kind.qtype in INTERRUPTED and rng.random() < 0.3:  # someone talks in between question and answer
            expanded.insert(1, (-1, "X: ~"))
        for template_index, raw in expanded:
            variants = raw.split(" | ")
            line = rng.choice(variants)
            if not _PREFIX.match(line):  # a variant without its own prefix takes the first one's
                line = _PREFIX.match(variants[0]).group(0) + line
            is_evidence, is_reply = line.startswith("*"), False
            line = line.lstrip("*")
            if line.startswith("^"):
                is_reply, line = True, line[1:]
            role, text = line.split(": ", 1)
            author = rng.choice(self.others(names["S"], names["A"])) if role == "X" else names[role]
            if text == "~":
                text = filler.roughen(rng.choice(filler.REACTIONS), rng)
            else:
                text = text.format(
                    **slots, **{k: v for k, v in names.items()}, **{k.lower(): v.lower() for k, v in names.items()}
                )
            reply = None
            if is_reply and rng.random() < 0.7:
                reply = by_template.get(template_index - 1)
            role = "evidence" if is_evidence else "scene"
            self.drafts.append(_Draft(ts, channel or kind.channel, author, text, role, reply))
            by_template[template_index] = len(self.drafts) - 1
            if is_evidence:
                evidence.append(len(self.drafts) - 1)
            ts += timedelta(seconds=rng.randint(15, 300))
        return evidence

    def loose(self, text: str, channel: str, author: str, age_days: float, role: str) -> None:
        day = day_at_age(age_days)
        self.drafts.append(
            _Draft(at_hour(day, self.rng), channel, author, filler.roughen(text, self.rng, typos=0.03), role)
        )

    def instance(self, kind: Kind, subject: str, age: float, asked_age: float = 0.0) -> None:
        """Plant one story: its evidence `age` days before NOW, its look-alikes before the moment it is asked
        (`asked_age` days before NOW: bench.soak asks at checkpoints, the benchmark at NOW)."""
        rng = self.rng
        a, b = rng.sample(self.others(subject), 2)
        names = {"S": subject, "A": a, "B": b}
        slots = self.slots(kind)
        mark = len(self.drafts)
        for _attempt in range(30):
            del self.drafts[mark:]
            evidence, when, window = self.plant_evidence(kind, names, slots, age)
            texts = [self.drafts[i].text for i in evidence]
            ev_words = set().union(*(content_words(t) for t in texts))
            candidates = [q for q in kind.questions]
            if kind.qtype in OVERLAP_FREE:
                candidates = [
                    q for q in candidates if not content_words(q.format(S=subject, when=when, **slots)) & ev_words
                ]
            if candidates:
                break
        else:
            raise ValueError(f"no question of {kind.key} avoids the words of its evidence: {texts}")
        question = rng.choice(candidates).format(S=subject, when=when, **slots)
        question = rng.choice(QUESTION_PREFIXES) + (question.lower() if rng.random() < 0.4 else question)
        if kind.qtype == "temporal":
            self._lookalikes(kind, names, slots, window)
        self.around(kind, names)
        for text in rng.sample(kind.chatter, min(2, len(kind.chatter))):  # recent look-alikes
            self.loose(text, kind.channel, rng.choice(self.others(subject)), asked_age + rng.uniform(1, 25), "recent")
        for text in kind.address:  # messages that merely address the subject, around then and recently
            for age_days in (age + rng.uniform(-20, 20), asked_age + rng.uniform(1, 25)):
                t = text.format(S=subject, s=subject.lower())
                self.loose(t, kind.channel, rng.choice(self.others(subject)), max(1, age_days), "address")
        answer = kind.answer.format(**slots)
        asker = rng.choice(self.others(subject, *self.not_asking(kind, names)))
        self.questions.append((kind, subject, question, evidence, answer, asker))

    def slots(self, kind: Kind) -> dict[str, str]:
        """One value per slot for an instance."""
        rng = self.rng
        slots = {key: rng.choice(values) for key, values in kind.slots.items()}
        if kind.key == "offers":  # the two companies must differ
            slots["co2"] = rng.choice([c for c in kind.slots["co2"] if c != slots["co1"]])
        return slots

    def around(self, kind: Kind, names: dict[str, str]) -> None:
        """More look-alikes around the instance's scenes (the harder stories plant some; the first ones none)."""

    def not_asking(self, kind: Kind, names: dict[str, str]) -> tuple[str, ...]:
        """Members besides the subject who do not ask the instance's question."""
        return ()

    def plant_evidence(self, kind: Kind, names: dict, slots: dict, age: float):
        rng = self.rng
        when, window = "", None
        start = at_hour(day_at_age(age), rng)
        evidence = self.scene(kind, kind.scenes[0], start, names, slots)
        if kind.qtype == "temporal":
            when, lo, hi = when_phrase(start, rng)
            window = (lo, hi)
        if kind.qtype == "multi":
            later = max(MIN_AGE_DAYS + 1, age - rng.uniform(14, 70))
            evidence += self.scene(kind, kind.scenes[1], at_hour(day_at_age(later), rng), names, slots)
        return evidence, when, window

    def _lookalikes(self, kind: Kind, names: dict, slots: dict, window: tuple[datetime, datetime]) -> None:
        """The same scene by the same subject at other times (one of them recent), with other slot values."""
        rng = self.rng
        lo, hi = window[0] - timedelta(days=10), window[1] + timedelta(days=10)
        used = {key: {value} for key, value in slots.items()}
        ages = [rng.uniform(3, 25)] + [rng.uniform(20, 440) for _ in range(2)]
        for age in ages:
            day = day_at_age(age)
            if lo <= day <= hi:
                continue
            other = {}
            for key, values in kind.slots.items():
                fresh = [v for v in values if v not in used[key]] or list(values)
                other[key] = rng.choice(fresh)
                used[key].add(other[key])
            mark = len(self.drafts)
            self.scene(kind, kind.scenes[0], at_hour(day, rng), names, other)
            for draft in self.drafts[mark:]:
                draft.role = "lookalike"


# A story kind, its subject, the age in days (before NOW) of its evidence, and of the moment it is asked.
Job = tuple[Kind, str, float, float]


def _jobs(rng: random.Random) -> list[Job]:
    """The benchmark's own stories: every kind for INSTANCES_PER_KIND members, evidence 1-12 months old."""
    jobs = [(kind, subject) for kind in KINDS for subject in rng.sample(NAMES, INSTANCES_PER_KIND)]
    rng.shuffle(jobs)
    span = MAX_AGE_DAYS - MIN_AGE_DAYS - 2  # a day's margin at both ends: times are drawn within the day
    ages = [MIN_AGE_DAYS + 1 + span * (i + rng.random()) / len(jobs) for i in range(len(jobs))]
    rng.shuffle(ages)
    # A multi story's later message must still be at least a month old.
    return [
        (kind, subject, max(age, MIN_AGE_DAYS + 45) if kind.qtype == "multi" else age, 0.0)
        for (kind, subject), age in zip(jobs, ages, strict=True)
    ]


def plant(
    seed: int, jobs: list[Job] | None = None
) -> tuple[list[Message], dict[int, str], list[Question], dict[str, Member], dict[str, Channel]]:
    """Every story planted for `seed` (or the given `jobs`: bench.soak plants its own): the messages in time order,
    their roles, the questions, members and channels."""
    rng = random.Random(f"stories-{seed}")
    members = {
        n: Member(snowflake(START - timedelta(days=300 + i)) + i, n, _username(n, i)) for i, n in enumerate(NAMES)
    }
    channels = {c: Channel(GUILD_ID + 100 + i, c) for i, c in enumerate(CHANNEL_WEIGHTS)}
    planter = Planter(rng)
    for kind, subject, age, asked_age in _jobs(rng) if jobs is None else jobs:
        planter.instance(kind, subject, age, asked_age)
    planted, roles, questions = finish(planter, members, channels, worker=1, used_ms=set())
    return planted, roles, questions, members, channels


def finish(
    planter: Planter, members: dict[str, Member], channels: dict[str, Channel], *, worker: int, used_ms: set[int]
) -> tuple[list[Message], dict[int, str], list[Question]]:
    """The planter's drafts as messages in time order (ids of `worker`, each in a millisecond not in `used_ms`,
    which is updated), their roles, and its questions."""
    order = sorted(range(len(planter.drafts)), key=lambda i: planter.drafts[i].ts)
    ids: dict[int, int] = {}
    for i in order:
        draft = planter.drafts[i]
        while int(draft.ts.timestamp() * 1000) in used_ms:
            draft.ts += timedelta(milliseconds=1)
        used_ms.add(int(draft.ts.timestamp() * 1000))
        ids[i] = snowflake(draft.ts, worker=worker)
    planted, roles = [], {}
    for i in order:
        d = planter.drafts[i]
        reply = ids[d.reply_to] if d.reply_to is not None else None
        planted.append(Message(ids[i], channels[d.channel].id, members[d.author].id, d.text, d.ts, reply))
        roles[ids[i]] = d.role
    questions = [
        Question(text, members[asker].id, NOW, kind.qtype, tuple(sorted(ids[i] for i in ev)), answer, f"{kind.key}/{s}")
        for kind, s, text, ev, answer, asker in planter.questions
    ]
    return planted, roles, questions


def _username(name: str, i: int) -> str:
    styles = ("{n}", "{n}_", "{n}.{i}", "x{n}x", "{n}{i}{i}", "the.{n}")
    return styles[i % len(styles)].format(n=name.lower(), i=i)
