"""Tombstones: deletions that outlive the data, checked by every write of messages, so nothing deleted returns.

A message may reach the database long after it was said: from this process's queue or spill file, another
process's, an import or a catch-up from Discord. If it was deleted meanwhile (in Discord, by a forget-me, a
purge, an opt-out), writing it would undo the deletion. So each deletion leaves a row here (in its own
transaction), and each ingest batch reads the rows that concern it inside the transaction that writes it and
leaves out what they bury. On PostgreSQL the two are ordered by advisory locks (`writer_locks`): a batch holds
its guilds' locks shared and the message lock shared, a deletion holds its guild's exclusively
(db/changes.lock_guild) and a Discord delete the message lock exclusively, so a batch either commits before a
deletion (which then deletes what it wrote) or reads its tombstone. On SQLite one writer holds the file.

Tombstones keep a time and a channel's id or a digest of a member's, never what was said or who was forgotten. They
are kept: a spill file or an export may be replayed much later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from db.changes import guild_lock_key
from db.ingest_rows import _parse_time
from db.models import DeletedMessage, Tombstone
from db.records import IncomingMessage, Kind, MessageDelete, ReplySource
from db.upsert import dialect_insert

MEMBER, CHANNEL, BEFORE = "member", "channel", "before"  # a member's target is `member_key`, not their id
_MESSAGE_LOCK = (0x456D, 0)  # Discord deletes against every batch

_LOOKUPS = (
    "SELECT message_id FROM deleted_messages WHERE message_id IN ({ids})",
    "SELECT guild_id, kind, target_id, before FROM tombstones WHERE guild_id IN ({guilds})",
    "SELECT guild_id, user_id FROM user_optouts WHERE guild_id IN ({guilds})",
)
BURY_MESSAGE = "INSERT INTO deleted_messages (message_id, at) VALUES ({p1}, {p2}) ON CONFLICT DO NOTHING"


def lookups(paramstyle: str, guilds: list[int], ids: list[int]) -> list[tuple[str, list[Any]]]:
    """The three reads a batch's graves come from, for the driver's own execute: (SQL, parameters)."""
    if paramstyle == "qmark":  # SQLite: at most a batch's ids (1,000 by default) as markers
        return [
            (sql.format(ids=", ".join("?" * len(ids)) or "NULL", guilds=", ".join("?" * len(guilds)) or "NULL"), p)
            for sql, p in zip(_LOOKUPS, (ids, guilds, guilds), strict=True)
        ]
    return [  # asyncpg: one array parameter
        (sql.format(ids="SELECT unnest($1::bigint[])", guilds="SELECT unnest($1::bigint[])"), [p])
        for sql, p in zip(_LOOKUPS, (ids, guilds, guilds), strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Graves:
    """What the tombstones say about one batch's messages."""

    deleted: frozenset[int] = frozenset()
    before: dict[tuple[int, str, int], datetime] = field(default_factory=dict)  # (guild, kind, target) -> time
    opted_out: frozenset[tuple[int, int]] = frozenset()

    def buries(self, guild_id: int, channel_id: int, user_id: int, at: datetime) -> bool:
        """Whether a message of that member, channel and time was deleted by a forget-me or a purge."""
        member = (guild_id, MEMBER, member_key(guild_id, user_id))
        for key in (member, (guild_id, CHANNEL, channel_id), (guild_id, BEFORE, 0)):
            limit = self.before.get(key)
            if limit is not None and at <= limit:
                return True
        return False

    def refuses(self, message: IncomingMessage) -> bool:
        """Whether the message must not be stored."""
        if message.message_id in self.deleted:
            return True
        if message.kind != Kind.BOT and (message.guild_id, message.author_id) in self.opted_out:
            return True
        return self.buries(message.guild_id, message.channel_id, message.author_id, message.created_at)


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


def graves_from(deleted: Iterable[Any], rows: Iterable[Any], optouts: Iterable[Any]) -> Graves:
    """Graves from the three lookups' rows (times as the driver returns them)."""
    return Graves(
        frozenset(int(m) for (m,) in deleted),
        {(int(g), str(k), int(t)): _parse_time(before) for g, k, t, before in rows},
        frozenset((int(g), int(u)) for g, u in optouts),
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
    kept: list[Any] = []
    for item in ops:
        op = getattr(item, "op", item)
        if isinstance(op, IncomingMessage) and (op.message_id in doomed or graves.refuses(op)):
            continue
        if isinstance(op, ReplySource) and op.reply_id in doomed:
            continue
        kept.append(item)
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
