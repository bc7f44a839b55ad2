"""Forgetting a statement everywhere it is written: messages, the bot's replies, summaries, facts' history.

"Forget that I'm allergic to peanuts" removes the statement from the facts (facts.py) and, here, from what
memory would otherwise keep repeating: the member's own messages that state it (only the clauses that do:
the rest of a message stays), messages addressed to the bot and its replies that state it (whole), messages of
others about the member, every summary, history or rollup that states it, the facts' revisions, and dead
letters. The days those messages fed lose their summaries, rebuilt lazily from what remains.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from bot.text import WORD, content_stems, remove_statement, states
from db import deletion, redaction
from db import facts as fact_rows
from db.records import Kind

PREFIX = 4  # index lookups use the first letters of each stem: stemmers disagree about word endings


@dataclass
class Redacted:
    """What forgetting a statement changed, beyond the facts."""

    counts: Counter[str] = field(default_factory=Counter)
    message_ids: set[int] = field(default_factory=set)
    days: set[date] = field(default_factory=set)

    @property
    def anything(self) -> bool:
        """Whether the statement was found anywhere."""
        return any(self.counts.values())


def target_of(fact: str, names: list[str]) -> set[str]:
    """The content stems a statement is recognised by (the subject's own names say nothing about it)."""
    drop = frozenset(w for name in names for w in WORD.findall(name.casefold()))
    return content_stems(fact, drop=drop)


def _about(text: str, subject_id: int, names: list[str]) -> bool:
    if f"<@{subject_id}>" in text or f"<@!{subject_id}>" in text:
        return True
    words = set(WORD.findall(text.casefold()))
    return any(set(WORD.findall(name.casefold())) <= words for name in names if name.strip())


async def redact(session: AsyncSession, guild_id: int, subject_id: int, names: list[str], fact: str) -> Redacted:
    """Remove a statement about a member from every place in the guild that keeps it (in this transaction)."""
    done = Redacted()
    target = target_of(fact, names)
    if not target:
        return done
    subject = names[0] if names else ""
    replies = await redaction.replies_from(session, guild_id, subject_id)
    prefixes = sorted({s[:PREFIX] for s in target})
    for row in await redaction.messages_with(session, guild_id, prefixes):
        mine = row.user_id == subject_id or row.message_id in replies
        if not (mine or _about(row.text, subject_id, names)) or not states(row.text, target):
            continue
        remaining: str | None = None
        if row.kind == Kind.SPEECH:
            _, rest = remove_statement(row.text, target, subject=subject)
            remaining = rest if len(content_stems(rest)) > 1 else None  # "Elefant." alone says nothing
        await redaction.rewrite_message(session, row.message_id, remaining)
        done.counts["messages" if row.kind != Kind.BOT else "bot_replies"] += 1
        done.message_ids.add(row.message_id)
        done.days |= deletion.utc_days([row.at])
    stale = [
        d
        for d in await redaction.derived_of(session, guild_id)
        if states(d.text, target) and (d.user_id == subject_id or _about(d.text, subject_id, names))
    ]
    await redaction.delete_derived(session, stale)
    done.counts["summaries"] += len(stale)
    await deletion.drop_derived(session, guild_id, done.days, done.counts)
    for revision in await fact_rows.revisions_of(session, guild_id, subject_id):
        old = remove_statement(revision.old_blob, target, subject=subject)[1]
        new = remove_statement(revision.new_blob, target, subject=subject)[1]
        if (old, new) != (revision.old_blob, revision.new_blob):
            await fact_rows.rewrite_revision(session, revision.id, old_blob=old, new_blob=new)
            done.counts["fact_revisions"] += 1
    dead = [
        i
        for i, payload in await redaction.dead_letters_of(session, guild_id)
        if states(str(json.loads(payload).get("content", "")), target)
    ]
    await redaction.delete_dead_letters(session, dead)
    done.counts["dead_letters"] += len(dead)
    return done
