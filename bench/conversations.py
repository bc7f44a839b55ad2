"""A seeded, hard recall benchmark: a multi-month, multi-party Discord guild with questions and marked evidence.

`generate(profile, seed)` builds 16 members chatting in 9 channels for about 15 months before a fixed `NOW`
(`bench.conversation_guild`). The stories (`bench.conversation_stories`, planted by `bench.conversation_planting`)
plant evidence 1–12 months before `NOW` and one question per story; the stories depend only on the seed, so the
small profile (20,000 messages) and the large one (1,000,000) ask the same questions with the same evidence, and
only the filler between them (`bench.conversation_filler`) grows. Filler comes in sessions of banter, small talk,
topic chatter that shares the questions' vocabulary, and lines that merely address members; every story also
leaves newer look-alikes (recent chatter on its topic, the same kind of scene at other times).

Question types: paraphrase (no content word shared with the evidence), next_turn (the question echoes a message,
the answer is the reply), multi (two evidence messages weeks apart), temporal (the question names a time; the
same kind of message exists at other times) and name (the question names a member whom other messages merely
address). `content_words` is the overlap measure: lower case, stopwords out, Snowball-stemmed.

Issue 38 added three harder types (`bench.conversation_harder`): spread (the answer in 2-4 conversations of the
subject days to weeks apart), answered_by_other (the subject's reply to another member's question, sharing no word
with what is asked) and wrong_speaker (the question names one of a pair, the other one said it). They are planted
on top of the first stories: those, their questions (the first 256 of `questions`) and the filler between them are
what they were, and a profile's count (20,000 for "small") is the first stories' and the filler's, so the guild
holds the harder stories' messages more than that.

Messages stream in time order (`Conversation.iter_messages`); `write_exports` writes DiscordChatExporter-style
JSON, one file per channel, without holding the messages.

    python -m bench.conversations                       # small profile, summary statistics
    python -m bench.conversations --profile large --export /tmp/guild
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from bench import conversation_filler as filler
from bench.conversation_guild import (
    GUILD_ID,
    GUILD_NAME,
    MAX_AGE_DAYS,
    MIN_AGE_DAYS,
    NOW,
    Channel,
    Member,
    Message,
    Question,
    content_words,
)
from bench.conversation_harder import plant_harder
from bench.conversation_planting import plant
from bench.conversation_stories import TYPES

PROFILES = {"small": 20_000, "large": 1_000_000}


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
    harder_ids: frozenset[int] = field(repr=False, default=frozenset())  # planted on top: the filler ignores them

    def iter_messages(self) -> Iterator[Message]:
        """Every message in time (= id) order, the filler generated on the fly from the seed."""
        return filler.stream(self)

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


def generate(profile: str | int = "small", seed: int = 7) -> Conversation:
    """The benchmark guild: `profile` is "small" (20 k messages), "large" (1 M) or a message count; the harder
    stories' messages come on top."""
    total = PROFILES[profile] if isinstance(profile, str) else int(profile)
    first, roles, questions, members, channels = plant(seed)
    harder, harder_roles, harder_questions = plant_harder(seed, members, channels, first)
    planted = sorted(first + harder, key=lambda m: m.message_id)  # ids in time order: milliseconds never shared
    roles |= harder_roles
    questions += harder_questions
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
        total + len(harder),
        seed,
        planted,
        roles,
        frozenset(m.message_id for m in harder),
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
        record = _record(message, members[message.author_id], conv.guild_id)
        handle = files[message.channel_id]
        handle.write((",\n" if counts[message.channel_id] else "") + json.dumps(record, ensure_ascii=False))
        counts[message.channel_id] += 1
    for channel_id, handle in files.items():
        handle.write(f'\n], "messageCount": {counts[channel_id]}}}\n')
        handle.close()
    return paths


def _record(message: Message, author: Member, guild_id: int) -> dict[str, Any]:
    """One message as DiscordChatExporter writes it."""
    record: dict[str, Any] = {
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
            "guildId": str(guild_id),
        }
    return record


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
        share = sum(picked) / max(1, len(picked))
        lines.append(f"  {qtype:<17} {len(picked):>4} questions, overlap-free {share:.2f}")
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
