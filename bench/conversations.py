"""A seeded, hard recall benchmark: a multi-month, multi-party Discord guild with questions and marked evidence.

`generate(profile, seed)` builds 16 members chatting in 9 channels for about 15 months before a fixed `NOW`. The
stories (`bench.conversation_stories`) plant evidence 1–12 months before `NOW` and one question per story; the
stories depend only on the seed, so the small profile (20,000 messages) and the large one (1,000,000) ask the
same questions with the same evidence, and only the filler between them grows. Filler comes in sessions of
banter, small talk, topic chatter that shares the questions' vocabulary, and lines that merely address members;
every story also leaves newer look-alikes (recent chatter on its topic, the same kind of scene at other times).

Question types: paraphrase (no content word shared with the evidence), next_turn (the question echoes a message,
the answer is the reply), multi (two evidence messages weeks apart), temporal (the question names a time; the
same kind of message exists at other times) and name (the question names a member whom other messages merely
address). `content_words` is the overlap measure: lower case, stopwords out, Snowball-stemmed.

Messages stream in time order (`Conversation.iter_messages`); `write_exports` writes DiscordChatExporter-style
JSON, one file per channel, without holding the messages.

    python -m bench.conversations                       # small profile, summary statistics
    python -m bench.conversations --profile large --export /tmp/guild
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path

import snowballstemmer

from bench import conversation_filler as filler
from bench.conversation_stories import KINDS, TYPES, Kind

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
START = NOW - timedelta(days=450)
GUILD_ID = 1_180_000_000_000_000_001
GUILD_NAME = "the herd"
DISCORD_EPOCH_MS = 1_420_070_400_000
PROFILES = {"small": 20_000, "large": 1_000_000}
INSTANCES_PER_KIND = 4
MIN_AGE_DAYS, MAX_AGE_DAYS = 30, 365

NAMES = (
    "Ana Mira Jon Melanie Tomasz Priya Kenji Sofia Dev Lars Aisha Rui Hannah Omar Beto Yuki".split()  # display names
)
CHANNEL_WEIGHTS = {
    "general": 30,
    "off-topic": 20,
    "gaming": 12,
    "food": 8,
    "pets": 6,
    "travel": 6,
    "music": 6,
    "books": 5,
    "fitness": 7,
}
# Share of the day's messages per UTC hour: quiet nights, busy evenings.
HOUR_WEIGHTS = (3, 2, 1, 1, 1, 1, 2, 4, 6, 7, 7, 8, 9, 9, 8, 8, 9, 11, 13, 14, 14, 12, 9, 5)
QUESTION_PREFIXES = ("", "", "", "", "hey elefant, ", "@Elefant ", "quick q: ", "elefant ", "random q but ")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn d did didn do does doesn doing don down during each few for from
    further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn
    it its itself just ll m me more most mustn my myself no nor not now o of off on once only or other our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was wasn we were weren
    what when where which while who whom why will with won would wouldn y you your yours yourself yourselves
    anyone anything someone something ever also us let get got""".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_STEMMER = snowballstemmer.stemmer("english")


def content_words(text: str) -> set[str]:
    """The stemmed content words of `text` (lower case, stopwords removed, Snowball English stems)."""
    return set(_STEMMER.stemWords([w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]))


@dataclass(frozen=True)
class Member:
    id: int
    name: str  # display name (the nickname in exports)
    username: str


@dataclass(frozen=True)
class Channel:
    id: int
    name: str


@dataclass(frozen=True)
class Message:
    message_id: int
    channel_id: int
    author_id: int
    text: str
    timestamp: datetime
    reply_to_id: int | None = None


@dataclass(frozen=True)
class Question:
    text: str
    asker_id: int
    asked_at: datetime
    type: str
    evidence_ids: tuple[int, ...]
    answer: str
    story: str  # kind key and subject, e.g. "camping/Jon"


@dataclass
class Conversation:
    """The generated guild; messages stream from `iter_messages()` (or come as a list from `.messages`)."""

    guild_id: int
    guild_name: str
    now: datetime
    members: list[Member]
    channels: list[Channel]
    questions: list[Question]
    message_count: int
    seed: int
    planted: list[Message] = field(repr=False)  # evidence and distractors, in time order
    planted_role: dict[int, str] = field(repr=False)  # message id -> evidence / scene / lookalike / recent / address

    def iter_messages(self) -> Iterator[Message]:
        """Every message in time (= id) order, the filler generated on the fly from the seed."""
        return _stream(self)

    @cached_property
    def messages(self) -> list[Message]:
        return list(self.iter_messages())

    def member(self, member_id: int) -> Member:
        return self._members[member_id]

    def channel(self, channel_id: int) -> Channel:
        return self._channels[channel_id]

    @cached_property
    def _members(self) -> dict[int, Member]:
        return {m.id: m for m in self.members}

    @cached_property
    def _channels(self) -> dict[int, Channel]:
        return {c.id: c for c in self.channels}


# ---- ids and times ------------------------------------------------------------------------------------------------


def snowflake(ts: datetime, worker: int = 0, increment: int = 0) -> int:
    """A Discord-style id: milliseconds since the Discord epoch, then worker and increment bits."""
    ms = int(ts.timestamp() * 1000) - DISCORD_EPOCH_MS
    return (ms << 22) | (worker << 17) | increment


def _at_hour(day: datetime, rng: random.Random) -> datetime:
    hour = rng.choices(range(24), HOUR_WEIGHTS)[0]
    return day.replace(hour=hour, minute=rng.randrange(60), second=rng.randrange(60), microsecond=0)


def _day_at_age(age_days: float) -> datetime:
    return (NOW - timedelta(days=age_days)).replace(hour=0, minute=0, second=0, microsecond=0)


MONTHS = "january february march april may june july august september october november december".split()


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


# ---- the stories --------------------------------------------------------------------------------------------------


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


class _Planter:
    """Turns the story kinds into drafted messages and questions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.drafts: list[_Draft] = []
        self.questions: list[tuple[Kind, str, str, list[int], str, str]] = []  # kind, subject, text, evidence...

    def others(self, *exclude: str) -> list[str]:
        return [n for n in NAMES if n not in exclude]

    def scene(self, kind: Kind, lines: tuple[str, ...], start: datetime, names: dict[str, str], slots: dict) -> list:
        """Draft one scene; returns the indexes of its evidence lines (or all lines for look-alikes)."""
        rng, evidence = self.rng, []
        by_template: dict[int, int] = {}
        ts = start
        expanded = list(enumerate(lines))
        if kind.qtype == "next_turn" and rng.random() < 0.3:  # someone talks in between question and answer
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
            self.drafts.append(_Draft(ts, kind.channel, author, text, "evidence" if is_evidence else "scene", reply))
            by_template[template_index] = len(self.drafts) - 1
            if is_evidence:
                evidence.append(len(self.drafts) - 1)
            ts += timedelta(seconds=rng.randint(15, 300))
        return evidence

    def loose(self, text: str, channel: str, author: str, age_days: float, role: str) -> None:
        day = _day_at_age(age_days)
        self.drafts.append(
            _Draft(_at_hour(day, self.rng), channel, author, filler.roughen(text, self.rng, typos=0.03), role)
        )

    def instance(self, kind: Kind, subject: str, age: float) -> None:
        rng = self.rng
        a, b = rng.sample(self.others(subject), 2)
        names = {"S": subject, "A": a, "B": b}
        slots = {key: rng.choice(values) for key, values in kind.slots.items()}
        if kind.key == "offers":  # the two companies must differ
            slots["co2"] = rng.choice([c for c in kind.slots["co2"] if c != slots["co1"]])
        mark = len(self.drafts)
        for _attempt in range(30):
            del self.drafts[mark:]
            evidence, when, window = self._plant_evidence(kind, names, slots, age)
            texts = [self.drafts[i].text for i in evidence]
            ev_words = set().union(*(content_words(t) for t in texts))
            candidates = [q for q in kind.questions]
            if kind.qtype == "paraphrase":
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
        for text in rng.sample(kind.chatter, min(2, len(kind.chatter))):  # recent look-alikes
            self.loose(text, kind.channel, rng.choice(self.others(subject)), rng.uniform(1, 25), "recent")
        for text in kind.address:  # messages that merely address the subject, around then and recently
            for age_days in (age + rng.uniform(-20, 20), rng.uniform(1, 25)):
                t = text.format(S=subject, s=subject.lower())
                self.loose(t, kind.channel, rng.choice(self.others(subject)), max(1, age_days), "address")
        answer = kind.answer.format(**slots)
        self.questions.append((kind, subject, question, evidence, answer, rng.choice(self.others(subject))))

    def _plant_evidence(self, kind: Kind, names: dict, slots: dict, age: float):
        rng = self.rng
        when, window = "", None
        start = _at_hour(_day_at_age(age), rng)
        evidence = self.scene(kind, kind.scenes[0], start, names, slots)
        if kind.qtype == "temporal":
            when, lo, hi = when_phrase(start, rng)
            window = (lo, hi)
        if kind.qtype == "multi":
            later = max(MIN_AGE_DAYS + 1, age - rng.uniform(14, 70))
            evidence += self.scene(kind, kind.scenes[1], _at_hour(_day_at_age(later), rng), names, slots)
        return evidence, when, window

    def _lookalikes(self, kind: Kind, names: dict, slots: dict, window: tuple[datetime, datetime]) -> None:
        """The same scene by the same subject at other times (one of them recent), with other slot values."""
        rng = self.rng
        lo, hi = window[0] - timedelta(days=10), window[1] + timedelta(days=10)
        used = {key: {value} for key, value in slots.items()}
        ages = [rng.uniform(3, 25)] + [rng.uniform(20, 440) for _ in range(2)]
        for age in ages:
            day = _day_at_age(age)
            if lo <= day <= hi:
                continue
            other = {}
            for key, values in kind.slots.items():
                fresh = [v for v in values if v not in used[key]] or list(values)
                other[key] = rng.choice(fresh)
                used[key].add(other[key])
            mark = len(self.drafts)
            self.scene(kind, kind.scenes[0], _at_hour(day, rng), names, other)
            for draft in self.drafts[mark:]:
                draft.role = "lookalike"


def _plant(seed: int) -> tuple[list[Message], dict[int, str], list[Question], dict[str, Member], dict[str, Channel]]:
    rng = random.Random(f"stories-{seed}")
    members = {
        n: Member(snowflake(START - timedelta(days=300 + i)) + i, n, _username(n, i)) for i, n in enumerate(NAMES)
    }
    channels = {c: Channel(GUILD_ID + 100 + i, c) for i, c in enumerate(CHANNEL_WEIGHTS)}
    planter = _Planter(rng)
    jobs = [(kind, subject) for kind in KINDS for subject in rng.sample(NAMES, INSTANCES_PER_KIND)]
    rng.shuffle(jobs)
    span = MAX_AGE_DAYS - MIN_AGE_DAYS - 2  # a day's margin at both ends: times are drawn within the day
    ages = [MIN_AGE_DAYS + 1 + span * (i + rng.random()) / len(jobs) for i in range(len(jobs))]
    rng.shuffle(ages)
    for (kind, subject), age in zip(jobs, ages, strict=True):
        # A multi story's later message must still be at least a month old.
        planter.instance(kind, subject, max(age, MIN_AGE_DAYS + 45) if kind.qtype == "multi" else age)
    # Ids: unique milliseconds for planted messages (worker 1), in time order.
    order = sorted(range(len(planter.drafts)), key=lambda i: planter.drafts[i].ts)
    ids: dict[int, int] = {}
    used_ms: set[int] = set()
    for i in order:
        draft = planter.drafts[i]
        while int(draft.ts.timestamp() * 1000) in used_ms:
            draft.ts += timedelta(milliseconds=1)
        used_ms.add(int(draft.ts.timestamp() * 1000))
        ids[i] = snowflake(draft.ts, worker=1)
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
    return planted, roles, questions, members, channels


def _username(name: str, i: int) -> str:
    styles = ("{n}", "{n}_", "{n}.{i}", "x{n}x", "{n}{i}{i}", "the.{n}")
    return styles[i % len(styles)].format(n=name.lower(), i=i)


# ---- filler -------------------------------------------------------------------------------------------------------


def _day_counts(total: int, days: list[datetime], rng: random.Random) -> list[int]:
    weights = [(1.3 if d.weekday() >= 5 else 1.0) * rng.gammavariate(4, 0.25) for d in days]
    scale = total / sum(weights)
    counts = [int(w * scale) for w in weights]
    for i in rng.sample(range(len(days)), total - sum(counts)):
        counts[i] += 1
    return counts


class _Filler:
    """Sessions of chat: a few members in one channel, a mix of banter, small talk, topic chatter and addressing."""

    def __init__(self, rng: random.Random, members: dict[str, Member], channels: dict[str, Channel]) -> None:
        self.rng = rng
        self.members = members
        self.channels = channels
        self.activity = [1 / (rank + 1) ** 0.7 for rank in range(len(NAMES))]
        self.chatter: dict[str, list[str]] = defaultdict(list)
        for kind in KINDS:
            self.chatter[kind.channel] += kind.chatter
        self.all_chatter = [line for kind in KINDS for line in kind.chatter]

    def text(self, channel: str, speakers: list[str], author: str) -> str:
        rng, r = self.rng, self.rng.random()
        if r < 0.30:
            text = rng.choice(filler.BANTER)
        elif r < 0.50:
            text = filler.fill(rng.choice(filler.SMALL_TALK), rng)
        elif r < 0.72:
            pool = self.chatter.get(channel) if rng.random() < 0.8 else None
            text = rng.choice(pool or self.all_chatter)
        elif r < 0.85:
            text = rng.choice(filler.REACTIONS)
        else:
            others = [s for s in speakers if s != author] or [n for n in NAMES if n != author]
            name = rng.choice(others)
            text = rng.choice(filler.ADDRESS).format(name=name if rng.random() < 0.3 else name.lower())
        return filler.roughen(text, rng)

    def day(self, day: datetime, count: int) -> list[tuple[datetime, str, str, str, int | None]]:
        """`count` messages on `day` as (time, channel, author, text, index of the message replied to)."""
        rng, out = self.rng, []
        end = day + timedelta(days=1)
        names = list(CHANNEL_WEIGHTS)
        while len(out) < count:
            channel = rng.choices(names, list(CHANNEL_WEIGHTS.values()))[0]
            speakers = rng.choices(NAMES, self.activity, k=rng.randint(2, 5))
            ts = _at_hour(day, rng)
            first = len(out)
            for _ in range(min(count - len(out), 1 + int(rng.expovariate(1 / 7)))):
                if ts >= end:
                    break
                author = rng.choice(speakers)
                reply = rng.randrange(first, len(out)) if len(out) > first and rng.random() < 0.1 else None
                out.append((ts, channel, author, self.text(channel, speakers, author), reply))
                ts += timedelta(seconds=rng.expovariate(1 / 70), milliseconds=rng.randrange(1000))
        return out


def _stream(conv: Conversation) -> Iterator[Message]:
    rng = random.Random(f"filler-{conv.seed}-{conv.message_count}")
    members = {m.name: m for m in conv.members}
    channels = {c.name: c for c in conv.channels}
    maker = _Filler(rng, members, channels)
    first_day = START.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [first_day + timedelta(days=i) for i in range((NOW - first_day).days + 1)]
    counts = _day_counts(max(0, conv.message_count - len(conv.planted)), days, rng)
    planted_days = [m.timestamp.replace(hour=0, minute=0, second=0, microsecond=0) for m in conv.planted]
    for day, count in zip(days, counts, strict=True):
        lo, hi = bisect.bisect_left(planted_days, day), bisect.bisect_right(planted_days, day)
        batch = conv.planted[lo:hi]
        taken = {int(m.timestamp.timestamp() * 1000) for m in batch}
        per_ms: Counter[int] = Counter()
        made: list[Message] = []
        for drafted, channel, author, text, reply in maker.day(day, count):
            ms = int(min(drafted, NOW - timedelta(seconds=rng.randrange(1, 36000))).timestamp() * 1000)
            while ms in taken:  # never share a millisecond with a planted message
                ms += 1
            ts = datetime.fromtimestamp(ms / 1000, UTC)
            message_id = snowflake(ts, increment=per_ms[ms])
            per_ms[ms] += 1
            reply_id = made[reply].message_id if reply is not None and made[reply].message_id < message_id else None
            made.append(Message(message_id, channels[channel].id, members[author].id, text, ts, reply_id))
        yield from sorted([*batch, *made], key=lambda m: m.message_id)


# ---- public API ---------------------------------------------------------------------------------------------------


def generate(profile: str | int = "small", seed: int = 7) -> Conversation:
    """The benchmark guild: `profile` is "small" (20 k messages), "large" (1 M) or a message count."""
    total = PROFILES[profile] if isinstance(profile, str) else int(profile)
    planted, roles, questions, members, channels = _plant(seed)
    by_id = {m.message_id: m for m in planted}
    ages = [(NOW - by_id[i].timestamp).days for q in questions for i in q.evidence_ids]
    if not MIN_AGE_DAYS <= min(ages) <= max(ages) <= MAX_AGE_DAYS:
        raise ValueError(f"evidence ages {min(ages)}..{max(ages)} days fall outside the 1-12 month range")
    free = [
        not content_words(q.text) & set().union(*(content_words(by_id[i].text) for i in q.evidence_ids))
        for q in questions
    ]
    if sum(free) < len(free) / 2:
        raise ValueError(f"only {sum(free)} of {len(free)} questions avoid their evidence's words")
    return Conversation(
        GUILD_ID,
        GUILD_NAME,
        NOW,
        list(members.values()),
        list(channels.values()),
        questions,
        total,
        seed,
        planted,
        roles,
    )


def write_exports(conv: Conversation, directory: Path) -> list[Path]:
    """DiscordChatExporter-style JSON, one file per channel, streamed."""
    directory.mkdir(parents=True, exist_ok=True)
    members = {m.id: m for m in conv.members}
    files, counts, paths = {}, Counter(), []
    for channel in conv.channels:
        path = directory / f"{conv.guild_name} - {channel.name} [{channel.id}].json"
        handle = path.open("w", encoding="utf-8")
        preamble = {
            "guild": {"id": str(conv.guild_id), "name": conv.guild_name},
            "channel": {
                "id": str(channel.id),
                "type": "GuildTextChat",
                "categoryId": None,
                "category": None,
                "name": channel.name,
                "topic": None,
            },
        }
        handle.write(json.dumps(preamble, ensure_ascii=False)[:-1] + ', "messages": [\n')
        files[channel.id] = handle
        paths.append(path)
    for message in conv.iter_messages():
        author = members[message.author_id]
        record = {
            "id": str(message.message_id),
            "type": "Reply" if message.reply_to_id else "Default",
            "timestamp": message.timestamp.isoformat(timespec="milliseconds"),
            "timestampEdited": None,
            "callEndedTimestamp": None,
            "isPinned": False,
            "content": message.text,
            "author": {
                "id": str(author.id),
                "name": author.username,
                "discriminator": "0000",
                "nickname": author.name,
                "color": None,
                "isBot": False,
                "roles": [],
                "avatarUrl": "https://cdn.discordapp.com/embed/avatars/0.png",
            },
            "attachments": [],
            "embeds": [],
            "stickers": [],
            "reactions": [],
            "mentions": [],
        }
        if message.reply_to_id:
            record["reference"] = {
                "messageId": str(message.reply_to_id),
                "channelId": str(message.channel_id),
                "guildId": str(conv.guild_id),
            }
        handle = files[message.channel_id]
        handle.write((",\n" if counts[message.channel_id] else "") + json.dumps(record, ensure_ascii=False))
        counts[message.channel_id] += 1
    for channel_id, handle in files.items():
        handle.write(f'\n], "messageCount": {counts[channel_id]}}}\n')
        handle.close()
    return paths


def overlap_free(conv: Conversation, question: Question) -> bool:
    """True when the question shares no content word with any of its evidence messages."""
    texts = {m.message_id: m.text for m in conv.planted}
    evidence = set().union(*(content_words(texts[i]) for i in question.evidence_ids))
    return not content_words(question.text) & evidence


def summary(conv: Conversation) -> str:
    """Counts per type, the share of overlap-free questions, and how old the evidence is."""
    by_id = {m.message_id: m for m in conv.planted}
    lines = [f"{conv.message_count:,} messages, {len(conv.planted):,} planted, {len(conv.questions)} questions"]
    free = [overlap_free(conv, q) for q in conv.questions]
    lines.append(f"questions sharing no content word with their evidence: {sum(free) / len(free):.2f}")
    for qtype in TYPES:
        picked = [f for q, f in zip(conv.questions, free, strict=True) if q.type == qtype]
        lines.append(f"  {qtype:<11} {len(picked):>4} questions, overlap-free {sum(picked) / max(1, len(picked)):.2f}")
    ages = [(conv.now - by_id[i].timestamp).days for q in conv.questions for i in q.evidence_ids]
    buckets = Counter(min(12, age // 30) for age in ages)
    lines.append("evidence age (months, 30-day buckets): " + " ".join(f"{k}:{buckets[k]}" for k in sorted(buckets)))
    roles = Counter(conv.planted_role.values())
    lines.append("planted roles: " + ", ".join(f"{k} {v}" for k, v in sorted(roles.items())))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--profile", default="small", help='"small", "large" or a message count')
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--export", type=Path, help="write DiscordChatExporter JSON files here")
    parser.add_argument("--examples", type=int, default=0, help="print this many questions with their evidence")
    args = parser.parse_args()
    profile = args.profile if args.profile in PROFILES else int(args.profile)
    started = time.perf_counter()
    conv = generate(profile, args.seed)
    print(summary(conv))
    if args.export:
        paths = write_exports(conv, args.export)
        print(f"wrote {len(paths)} files to {args.export}")
    else:
        count = sum(1 for _ in conv.iter_messages())
        print(f"streamed {count:,} messages")
    print(f"took {time.perf_counter() - started:.1f} s")
    by_id = {m.message_id: m for m in conv.planted}
    names = {m.id: m.name for m in conv.members}
    for q in random.Random(1).sample(conv.questions, min(args.examples, len(conv.questions))):
        print(f"\n[{q.type}] {names[q.asker_id]}: {q.text}  -> {q.answer}")
        for i in q.evidence_ids:
            m = by_id[i]
            print(f"    {m.timestamp:%Y-%m-%d} {names[m.author_id]}: {m.text}")


if __name__ == "__main__":
    main()
