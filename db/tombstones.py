"""Tombstones: deletions that outlive the data, checked by every write of messages, so nothing deleted returns.

A message may reach the database long after it was said: from this process's queue or spill file, another
process's, an import or a catch-up from Discord. If it was deleted meanwhile (in Discord, by a forget-me, a
purge, an opt-out), writing it would undo the deletion. So each deletion leaves a row here (in its own
transaction), and each ingest batch reads the rows that concern it inside the transaction that writes it and
leaves out what they bury. On PostgreSQL the two are ordered by advisory locks (`writer_locks`): a batch holds
its guilds' locks shared and the message lock shared, a deletion holds its guild's exclusively
(db/changes.lock_guild) and a Discord delete the message lock exclusively, so a batch either commits before a
deletion (which then deletes what it wrote) or reads its tombstone. On SQLite one writer holds the file.

The same read also says what else no way in may store, whatever its order: what a member said while opted out
(now, or in a span they have since closed: db/members.py), what is older than retention keeps, and — in what
others said before a forget-me — the forgotten member's mentions, rewritten as the forget rewrote the rows present
then (db/mentions.py).

Tombstones keep a time and a channel's id or a digest of a member's, never what was said or who was forgotten. They
are kept: a spill file or an export may be replayed much later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db.changes import guild_lock_key
from db.ingest_rows import DeadLetter, _dead_at, _parse_time
from db.mentions import unmentioned
from db.models import DeletedMessage, Tombstone
from db.records import IncomingMessage, Kind, MessageDelete, MessageEdit, ReplySource
from db.upsert import dialect_insert

MEMBER, CHANNEL, BEFORE = "member", "channel", "before"  # a member's target is `member_key`, not their id
_MESSAGE_LOCK = (0x456D, 0)  # Discord deletes against every batch

# Opt-outs before their spans: an opt-in (which deletes the one and writes the other in one transaction) committing
# between the two reads is seen by the second, and one committing before both by both.
_LOOKUPS = (
    "SELECT message_id FROM deleted_messages WHERE message_id IN ({ids})",
    "SELECT guild_id, kind, target_id, before FROM tombstones WHERE guild_id IN ({guilds})",
    "SELECT guild_id, user_id FROM user_optouts WHERE guild_id IN ({guilds})",
    "SELECT guild_id, member_key, since, until FROM optout_spans WHERE guild_id IN ({guilds})",
)
# An edit names no guild: where the messages of the batch's edits that mention someone are stored.
_PLACES = "SELECT message_id, guild_id FROM chat_history WHERE message_id IN ({ids})"
BURY_MESSAGE = "INSERT INTO deleted_messages (message_id, at) VALUES ({p1}, {p2}) ON CONFLICT DO NOTHING"


def lookups(paramstyle: str, guilds: list[int], ids: list[int]) -> list[tuple[str, list[Any]]]:
    """The four reads a batch's graves come from, for the driver's own execute: (SQL, parameters)."""
    return [_lookup(paramstyle, sql, p) for sql, p in zip(_LOOKUPS, (ids, guilds, guilds, guilds), strict=True)]


def places_lookup(paramstyle: str, ids: list[int]) -> tuple[str, list[Any]]:
    """The read of where edited messages are stored (`unplaced`), for the driver's own execute."""
    return _lookup(paramstyle, _PLACES, ids)


def _lookup(paramstyle: str, sql: str, values: list[int]) -> tuple[str, list[Any]]:
    if paramstyle == "qmark":  # SQLite: at most a batch's ids (1,000 by default) as markers
        marks = ", ".join("?" * len(values)) or "NULL"
        return sql.format(ids=marks, guilds=marks), values
    return sql.format(ids="SELECT unnest($1::bigint[])", guilds="SELECT unnest($1::bigint[])"), [values]


@dataclass(frozen=True, slots=True)
class Graves:
    """What the tombstones, the opt-outs and retention say about one batch's messages."""

    deleted: frozenset[int] = frozenset()
    before: dict[tuple[int, str, int], datetime] = field(default_factory=dict)  # (guild, kind, target) -> time
    opted_out: frozenset[tuple[int, int]] = frozenset()
    spans: dict[tuple[int, int], tuple[tuple[datetime, datetime], ...]] = field(default_factory=dict)
    kept_from: datetime | None = None  # retention: nothing said before it is stored
    places: dict[int, int] = field(default_factory=dict)  # an edited message -> its guild
    _keys: dict[tuple[int, int], int] = field(default_factory=dict)  # member digests of this batch, each made once

    def key(self, guild_id: int, user_id: int) -> int:
        """`member_key`, made once a batch per member (a batch's messages come from few members)."""
        try:
            return self._keys[(guild_id, user_id)]
        except KeyError:
            made = self._keys[(guild_id, user_id)] = member_key(guild_id, user_id)
            return made

    def buries(self, guild_id: int, channel_id: int, user_id: int, at: datetime) -> bool:
        """Whether a message of that member, channel and time was deleted by a forget-me or a purge."""
        member = (guild_id, MEMBER, self.key(guild_id, user_id))
        for key in (member, (guild_id, CHANNEL, channel_id), (guild_id, BEFORE, 0)):
            limit = self.before.get(key)
            if limit is not None and at <= limit:
                return True
        return False

    def forgotten(self, guild_id: int, user_id: int, at: datetime | None) -> bool:
        """Whether the member was forgotten after `at` (None: at any time)."""
        limit = self.before.get((guild_id, MEMBER, self.key(guild_id, user_id)))
        return limit is not None and (at is None or at <= limit)

    def withheld(self, guild_id: int, user_id: int, at: datetime) -> bool:
        """Whether the member said it while opted out, in a span they have closed since."""
        spans = self.spans.get((guild_id, self.key(guild_id, user_id)), ()) if self.spans else ()
        return any(since <= at <= until for since, until in spans)

    def refuses(self, message: IncomingMessage) -> bool:
        """Whether the message must not be stored."""
        if message.message_id in self.deleted:
            return True
        people = message.kind != Kind.BOT
        if people and (message.guild_id, message.author_id) in self.opted_out:
            return True
        if people and self.withheld(message.guild_id, message.author_id, message.created_at):
            return True
        return self.buries(message.guild_id, message.channel_id, message.author_id, message.created_at)

    def expired(self, item: Any) -> bool:
        """Whether a message (or a dead letter, by its own time) is older than retention keeps anything."""
        if self.kept_from is None:
            return False
        if isinstance(item, DeadLetter):
            return _dead_at(item.op) < self.kept_from
        return isinstance(item, IncomingMessage) and item.created_at < self.kept_from

    def unmentioned(self, item: Any, guild_of: dict[int, int]) -> Any:
        """The item without the mentions of members forgotten after it was said (a dead letter's whatever its time:
        it is kept for a look, and its time may be the moment it was refused)."""
        dead = isinstance(item, DeadLetter)
        op = item.op if dead else item
        if isinstance(op, IncomingMessage):
            guild, at = op.guild_id, op.edited_at or op.created_at
        elif isinstance(op, MessageEdit) and op.message_id in guild_of:
            guild, at = guild_of[op.message_id], op.edited_at
        else:
            return item
        clear = unmentioned(op, lambda user: self.forgotten(guild, user, None if dead else at))
        if clear is op:
            return item
        return DeadLetter(clear, item.reason) if dead else clear


def unplaced(ops: Sequence[Any]) -> list[int]:
    """Edits (dead letters' too) whose text mentions someone, of messages the batch itself does not bring: where
    they are stored is read first (`places_lookup`), so their guild's tombstones are read (and locked) too."""
    brought = {op.message_id for op in ops if isinstance(op, IncomingMessage)}
    return _plausible(
        op.message_id
        for op in (getattr(item, "op", item) for item in ops)
        if isinstance(op, MessageEdit) and "<@" in op.content and op.message_id not in brought
    )


def asked(ops: Sequence[Any]) -> tuple[list[int], list[int]]:
    """The guilds and message ids a batch's tombstones are looked up by (none: nothing to look up)."""
    guilds: set[int] = set()
    ids: set[int] = set()
    for item in ops:
        op = getattr(item, "op", item)  # a dead letter carries its operation
        if isinstance(op, IncomingMessage):
            guilds.add(op.guild_id)
            ids.add(op.message_id)
        elif isinstance(op, ReplySource):
            guilds.add(op.guild_id)
            ids.update(i for i in (op.reply_id, op.message_id) if i is not None)
    return _plausible(guilds), _plausible(ids)


def _plausible(values: Iterable[Any]) -> list[int]:
    return sorted(v for v in values if isinstance(v, int) and 0 < v < 2**63)


def graves_from(
    deleted: Iterable[Any] = (),
    rows: Iterable[Any] = (),
    optouts: Iterable[Any] = (),
    spans: Iterable[Any] = (),
    *,
    kept_from: datetime | None = None,
    places: Iterable[Any] = (),
) -> Graves:
    """Graves from the four lookups' rows (times as the driver returns them), where retention begins and where the
    batch's edited messages are."""
    closed: dict[tuple[int, int], tuple[tuple[datetime, datetime], ...]] = {}
    for g, key, since, until in spans:
        closed[(int(g), int(key))] = (*closed.get((int(g), int(key)), ()), (_parse_time(since), _parse_time(until)))
    return Graves(
        frozenset(int(m) for (m,) in deleted),
        {(int(g), str(k), int(t)): _parse_time(before) for g, k, t, before in rows},
        frozenset((int(g), int(u)) for g, u in optouts),
        closed,
        kept_from,
        {int(m): int(g) for m, g in places},
    )


def sift(ops: Sequence[Any], graves: Graves) -> list[Any]:
    """The batch without what the tombstones bury; a reply built on buried data is deleted instead.

    Deletes in the batch count too, wherever they stand: a Discord message id, once deleted, never returns.
    """
    deleted = graves.deleted | {i for op in ops if isinstance(op, MessageDelete) for i in op.message_ids}
    graves = replace(graves, deleted=frozenset(deleted))
    said_at = {op.message_id: op.created_at for op in ops if isinstance(op, IncomingMessage)}
    doomed = {
        op.reply_id
        for op in ops
        if isinstance(op, ReplySource)
        and (
            (op.message_id is not None and op.message_id in deleted)
            or (op.user_id is not None and _buried_member(graves, op, said_at.get(op.reply_id)))
        )
    }
    guild_of = {**graves.places, **{op.message_id: op.guild_id for op in ops if isinstance(op, IncomingMessage)}}
    mourning = any(kind == MEMBER for _, kind, _ in graves.before)  # else no mention needs a look
    kept: list[Any] = []
    for item in ops:
        op = getattr(item, "op", item)
        if isinstance(op, IncomingMessage) and (op.message_id in doomed or graves.refuses(op)):
            continue
        if isinstance(op, ReplySource) and op.reply_id in doomed:
            continue
        if graves.expired(item):
            continue
        kept.append(graves.unmentioned(item, guild_of) if mourning else item)
    if doomed:  # one may be stored already, from an earlier batch
        kept.append(MessageDelete(tuple(sorted(doomed))))
    return kept


def member_key(guild_id: int, user_id: int) -> int:
    """How a forgotten member is named in their tombstone: a digest, not their id, so the database keeps no row
    that lists who asked to be forgotten (it can only answer whether a given member was, which is its job)."""
    digest = hashlib.blake2b(f"elefant-forgotten:{guild_id}:{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1  # a positive BIGINT


def _buried_member(graves: Graves, source: ReplySource, at: datetime | None) -> bool:
    limit = graves.before.get((source.guild_id, MEMBER, member_key(source.guild_id, source.user_id or 0)))
    if limit is None:
        return (source.guild_id, source.user_id) in graves.opted_out
    return at is None or at <= limit


def writer_locks(guilds: Sequence[int], *, deletes: bool) -> list[tuple[str, tuple[int, int]]]:
    """PostgreSQL advisory locks a batch takes before reading tombstones, in one order for every process."""
    message_lock = "pg_advisory_xact_lock" if deletes else "pg_advisory_xact_lock_shared"
    locks = [(message_lock, _MESSAGE_LOCK)]
    locks += [("pg_advisory_xact_lock_shared", key) for key in sorted({guild_lock_key(g) for g in guilds})]
    return locks


async def forgotten(session: AsyncSession) -> dict[tuple[int, int], datetime]:
    """(guild, member's digest) -> up to when the member was forgotten, for every forget-me of every guild."""
    rows = await session.execute(
        select(Tombstone.guild_id, Tombstone.target_id, Tombstone.before).where(Tombstone.kind == MEMBER)
    )
    return {(guild_id, key): before for guild_id, key, before in rows}


# ---- recording, inside a deletion's transaction ---------------------------------------------------------------


async def bury(session: AsyncSession, guild_id: int, kind: str, target_id: int, before: datetime) -> None:
    """Record that the guild's messages of `kind` `target_id` (0 for all) up to `before` are deleted."""
    insert = dialect_insert(session, Tombstone).values(guild_id=guild_id, kind=kind, target_id=target_id, before=before)
    # A later deletion of the same target moves the line forward, never back.
    await session.execute(
        insert.on_conflict_do_update(
            index_elements=["guild_id", "kind", "target_id"],
            set_={"before": insert.excluded.before},
            where=Tombstone.before < insert.excluded.before,
        )
    )


async def bury_messages(session: AsyncSession, message_ids: Iterable[int], *, at: datetime) -> None:
    """Record that these messages are deleted (a "forget that…", replies built on deleted data)."""
    rows = [{"message_id": m, "at": at} for m in sorted(set(message_ids))]
    for start in range(0, len(rows), 500):  # SQLite caps a statement's parameters
        chunk = rows[start : start + 500]
        await session.execute(dialect_insert(session, DeletedMessage).values(chunk).on_conflict_do_nothing())
