"""The ingest hot path: batched, idempotent writes of messages, edits and deletes with driver executemany.

Besides writing, a batch reports which stored messages its edits, deletes and re-kindings touched (as they
were before), so the derived data built from them can follow (bot/memory/changes.py), and it tells data
errors (a row no database will take) from the database being unavailable, so a poison row is isolated
instead of retried forever.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine

from db import tombstones
from db.engine import tune_sqlite
from db.ingest_rows import (
    DeadLetter,
    Touched,
    Written,
    _aware_time,
    _dead_at,
    _parse_time,
    _payload,
    _sqlite_time,
    touched_ids,
)
from db.ingest_statements import (
    DEAD_LETTER,
    DEFER_INDEX,
    DELETE_MESSAGE,
    EDIT_MESSAGE,
    END_DEFER,
    GUILDS_OF,
    INDEX_ADDED,
    INSERT_NEW,
    KIND_MESSAGE,
    KNOWN,
    LAST_ROWID,
    REPLY_SOURCE,
    TOUCHED,
    UPSERT_MESSAGE,
    UPSERT_NAME,
    VECTOR,
    Statement,
    render,
)
from db.names import fold
from db.records import (
    IncomingMessage,
    IngestOp,
    MessageDelete,
    MessageEdit,
    MessageKind,
    MessageVector,
    ReplySource,
)

KeptFrom = Callable[[], datetime | None]  # the oldest time a message may have to be stored (None: any)


class BatchWriter:
    """Turns ingest operations into executemany statements and commits each batch in one transaction."""

    def __init__(self, dialect: Dialect, *, kept_from: KeptFrom | None = None) -> None:
        # Where retention begins, asked at each batch: nothing said before it is stored, whatever way it came in.
        self._kept_from: KeptFrom = kept_from or _keep_everything
        self._upsert = render(UPSERT_MESSAGE, dialect)
        self._edit = render(EDIT_MESSAGE, dialect)
        self._delete = render(DELETE_MESSAGE, dialect)
        self._kind = render(KIND_MESSAGE, dialect)
        self._name = render(UPSERT_NAME, dialect)
        self._dead = render(DEAD_LETTER, dialect)
        self._source = render(REPLY_SOURCE, dialect)
        self._vector = render(VECTOR, dialect)
        self._bury = render(tombstones.BURY_MESSAGE, dialect)
        self._paramstyle = dialect.paramstyle
        self._marks = "?" if dialect.paramstyle == "qmark" else "$"
        self._time: Callable[[datetime], Any] = _sqlite_time if dialect.name == "sqlite" else _aware_time

    async def write(self, ops: Sequence[IngestOp | DeadLetter]) -> Written:
        """Commit `ops`, in arrival order, as one transaction; what edits and deletes touched, as it was."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release what the writer holds."""

    def touched_query(self, count: int) -> str:
        """The SELECT of `count` message ids' rows before they change."""
        if self._marks == "?":
            return TOUCHED.format(marks=", ".join("?" * count))
        return TOUCHED.format(marks=", ".join(f"${i}" for i in range(1, count + 1)))

    def prepare(self, ops: Sequence[IngestOp | DeadLetter]) -> list[Statement]:
        """Statements for `ops`: one per kind of operation, the kinds in one order and each statement's rows in key
        order, the same in every process. Two processes' batches then take their row locks in one order and cannot
        deadlock: statements in arrival order took them in whatever order messages, vectors and names happened to
        interleave (a batch upserted a name, then another's; a second batch the same two the other way round).

        The order changes no outcome: a message deleted anywhere in the batch is not written at all
        (tombstones.sift), a newer edit wins whichever comes first, a vector is stored only while its message holds
        the text it was computed from, and one message's operations of a kind keep their order (a stable sort).
        """
        by_kind: dict[type, list[Any]] = {}
        for op in ops:
            by_kind.setdefault(type(op), []).append(op)
        t = self._time
        statements: list[Statement] = []
        if messages := by_kind.get(IncomingMessage):
            statements.extend(self._messages(messages))
        if edits := _by_message(by_kind.get(MessageEdit)):
            statements.append((self._edit, [(e.content, t(e.edited_at), e.message_id) for e in edits]))
        if kinds := _by_message(by_kind.get(MessageKind)):
            statements.append((self._kind, [(int(k.kind), k.message_id) for k in kinds]))
        if deletes := by_kind.get(MessageDelete):
            ids = sorted({mid for d in deletes for mid in d.message_ids})
            statements.append((self._delete, [(mid,) for mid in ids]))
            statements.append((self._bury, [(mid, t(datetime.now(UTC))) for mid in ids]))
        if vectors := _by_message(by_kind.get(MessageVector)):
            statements.append(
                (self._vector, [(v.message_id, v.guild_id, v.model, v.vector, v.scale, v.text) for v in vectors])
            )
        if sources := by_kind.get(ReplySource):
            ordered = sorted(sources, key=lambda r: r.reply_id)
            statements.append((self._source, [(r.reply_id, r.guild_id, r.user_id, r.message_id) for r in ordered]))
        if dead := by_kind.get(DeadLetter):
            statements.append((self._dead, [self._dead_row(d) for d in dead]))
        return statements

    def _dead_row(self, dead: DeadLetter) -> tuple[Any, ...]:
        op = dead.op
        ids = [getattr(op, name, None) for name in ("guild_id", "channel_id", "author_id", "message_id")]
        safe = [v if isinstance(v, int) and 0 < v < 2**63 else None for v in ids]
        return (self._time(_dead_at(op)), *safe, dead.reason[:2000], _payload(op))

    def _messages(self, messages: list[IncomingMessage]) -> list[Statement]:
        t = self._time
        # Rows in key order in every process, so two batches touching the same rows cannot deadlock (a stable
        # sort: one id's versions keep their order).
        messages = sorted(messages, key=lambda m: m.message_id)
        rows = [
            (
                m.message_id,
                m.guild_id,
                m.channel_id,
                m.author_id,
                m.content,
                t(m.created_at),
                None if m.edited_at is None else t(m.edited_at),
                m.reply_to_id,
                int(m.kind),
            )
            for m in messages
        ]
        # The newest name per member in this batch; across batches the SQL keeps the newest.
        names: dict[tuple[int, int], tuple[Any, ...]] = {}
        for m, row in zip(messages, rows, strict=True):
            key = (m.guild_id, m.author_id)
            seen = names.get(key)
            if seen is None or seen[4] <= row[5]:
                user = m.author_username
                names[key] = (
                    m.guild_id,
                    m.author_id,
                    m.author_name,
                    user,
                    row[5],
                    fold(m.author_name),
                    fold(user) if user else None,
                )
        return [(self._upsert, rows), (self._name, [names[key] for key in sorted(names)])]

    def graves_lookups(self, guilds: list[int], ids: list[int]) -> list[tuple[str, list[Any]]]:
        """The reads that tell which of a batch's messages (`tombstones.asked`) the tombstones bury (none when the
        batch stores no message)."""
        return tombstones.lookups(self._paramstyle, guilds, ids) if guilds else []

    def places_lookup(self, ops: Sequence[IngestOp | DeadLetter]) -> tuple[str, list[Any]] | None:
        """The read of where the batch's edits that mention someone are stored (None: no such edit)."""
        unplaced = tombstones.unplaced(ops)
        return tombstones.places_lookup(self._paramstyle, unplaced) if unplaced else None

    def sifted(
        self, ops: Sequence[IngestOp | DeadLetter], found: list[list[Any]], places: list[Any]
    ) -> Sequence[IngestOp | DeadLetter]:
        """`ops` without what the lookups' rows and retention refuse (as they are when nothing could be)."""
        kept_from = self._kept_from()
        if not found and kept_from is None:
            return ops
        return tombstones.sift(ops, tombstones.graves_from(*found, kept_from=kept_from, places=places))


class SqliteBatch(BatchWriter):
    """SQLite: a batch as one transaction on a given sqlite3 connection (the writer thread's, or a benchmark's)."""

    def __init__(self, dialect: Dialect, *, kept_from: KeptFrom | None = None) -> None:
        super().__init__(dialect, kept_from=kept_from)
        self._insert_new = render(INSERT_NEW, dialect)

    def commit(self, connection: sqlite3.Connection, ops: Sequence[IngestOp | DeadLetter]) -> Written:
        """Build the rows of `ops` and write them in one transaction on `connection`, leaving out what the
        tombstones bury (read inside the transaction: the file has one writer, so no deletion can come between)."""
        new = known = 0
        connection.execute("BEGIN IMMEDIATE")
        try:
            guilds, ids = tombstones.asked(ops)
            where = self.places_lookup(ops)
            places = connection.execute(*where).fetchall() if where else []
            lookups = self.graves_lookups(sorted({*guilds, *(g for _, g in places)}), ids)
            found = [connection.execute(sql, params).fetchall() for sql, params in lookups]
            ops = self.sifted(ops, found, places)
            statements = self.prepare(ops)
            ids = touched_ids([op for op in ops if not isinstance(op, DeadLetter)])
            touched = (
                [
                    Touched(m, g, u, _parse_time(ts))
                    for m, g, u, ts in connection.execute(self.touched_query(len(ids)), ids)
                ]
                if ids
                else []
            )
            for sql, rows in statements:
                if sql is self._upsert:
                    added = self._upsert_messages(connection, rows)
                    new, known = new + added, known + len(rows) - added
                else:
                    connection.executemany(sql, rows)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        return Written(touched, new, known)

    def _upsert_messages(self, connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> int:
        """Upsert message rows and index the new ones (speech) in one statement; how many were new."""
        if len({row[0] for row in rows}) < len(rows):
            # The same message twice in one statement: its second row would run the update trigger on text the
            # index never saw. Rare (a replay within one batch), so the triggers do it all, row by row.
            return self._upsert_by_triggers(connection, rows)
        last = connection.execute(LAST_ROWID).fetchone()[0]  # new rows get larger rowids (none is AUTOINCREMENT)
        connection.execute(DEFER_INDEX)
        added = connection.executemany(self._insert_new, rows).rowcount  # rows the statement itself inserted
        connection.execute(END_DEFER)
        connection.execute(INDEX_ADDED, (last,))  # the new rows that are speech
        # Rows are (id, guild, channel, user, text, at, edited_at, …); a new row's own edit changes nothing here.
        edits = [(row[4], row[6], row[0]) for row in rows if row[6] is not None]
        if edits:
            connection.executemany(self._edit, edits)
        return added

    def _upsert_by_triggers(self, connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> int:
        last = connection.execute(LAST_ROWID).fetchone()[0]
        connection.executemany(self._upsert, rows)
        return connection.execute("SELECT count(*) FROM chat_history WHERE rowid > ?", (last,)).fetchone()[0]


class SqliteBatchWriter(SqliteBatch):
    """SQLite: one dedicated sqlite3 connection in one thread builds the rows and writes them.

    Doing both in the writer thread keeps the event loop free and avoids trading the GIL back and forth
    with it on every row (measured: ~1.5x the throughput of aiosqlite with rows built on the loop).
    """

    def __init__(self, engine: AsyncEngine, *, kept_from: KeptFrom | None = None) -> None:
        super().__init__(engine.dialect, kept_from=kept_from)
        path = engine.url.database
        if not path or path == ":memory:":
            raise ValueError("ingestion needs a SQLite file; in-memory databases are not supported")
        self._path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elefant-ingest")
        self._connection: sqlite3.Connection | None = None

    async def write(self, ops: Sequence[IngestOp | DeadLetter]) -> Written:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._write, ops)

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._close)
        self._thread.shutdown(wait=True)

    def _write(self, ops: Sequence[IngestOp | DeadLetter]) -> Written:
        if self._connection is None:
            self._connection = sqlite3.connect(self._path, isolation_level=None)
            tune_sqlite(self._connection, None)
        return self.commit(self._connection, ops)

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class PostgresBatchWriter(BatchWriter):
    """PostgreSQL: asyncpg's executemany on a pooled connection, one transaction per batch."""

    def __init__(self, engine: AsyncEngine, *, kept_from: KeptFrom | None = None) -> None:
        super().__init__(engine.dialect, kept_from=kept_from)
        self._engine = engine

    async def write(self, ops: Sequence[IngestOp | DeadLetter]) -> Written:
        new = known = 0
        async with self._engine.connect() as connection:
            raw = (await connection.get_raw_connection()).driver_connection
            assert raw is not None  # a checked-out connection always has its driver's connection
            async with raw.transaction():
                ops = await self._sifted(raw, ops)
                statements = self.prepare(ops)
                ids = touched_ids([op for op in ops if not isinstance(op, DeadLetter)])
                touched = (
                    [
                        Touched(m, g, u, _parse_time(ts))
                        for m, g, u, ts in await raw.fetch(self.touched_query(len(ids)), *ids)
                    ]
                    if ids
                    else []
                )
                for sql, rows in statements:
                    if sql is self._upsert:
                        unique = {row[0] for row in rows}
                        # executemany reports nothing back: what was there already is counted first
                        there = await raw.fetchval(KNOWN, list(unique))
                        new, known = new + len(unique) - there, known + len(rows) - len(unique) + there
                    await raw.executemany(sql, rows)
        return Written(touched, new, known)

    async def _sifted(self, raw: Any, ops: Sequence[IngestOp | DeadLetter]) -> Sequence[IngestOp | DeadLetter]:
        """`ops` without what the tombstones bury, read under locks that order this batch with every deletion.

        Every guild whose rows the batch writes is locked shared (vectors' and the stored rows edits, deletes and
        re-kindings change included): a deletion holds its guild's lock alone, so it never meets a batch halfway
        through the same rows (a forget-me deadlocked against vector batches that took no lock).
        """
        guilds, ids = tombstones.asked(ops)
        where = self.places_lookup(ops)
        places = list(await raw.fetch(where[0], *where[1])) if where else []
        guilds = sorted({*guilds, *(g for _, g in places)})
        lookups = self.graves_lookups(guilds, ids)
        deletes = any(isinstance(op, MessageDelete) for op in ops)
        locked = set(guilds) | {op.guild_id for op in ops if isinstance(op, MessageVector)}
        changed = [i for op in ops if isinstance(op, MessageEdit | MessageKind | MessageDelete) for i in _ids(op)]
        if changed:
            locked |= {g for (g,) in await raw.fetch(GUILDS_OF, changed)}
        if locked or deletes:
            for function, (key, value) in tombstones.writer_locks(sorted(locked), deletes=deletes):
                await raw.execute(f"SELECT {function}($1, $2)", key, value)
        found = [await raw.fetch(sql, *params) for sql, params in lookups]
        return self.sifted(ops, found, places)


def batch_writer_for(engine: AsyncEngine, *, kept_from: KeptFrom | None = None) -> BatchWriter:
    """The fastest writer for the engine's database (`kept_from`: retention's, None to keep everything)."""
    if engine.dialect.name == "sqlite":
        return SqliteBatchWriter(engine, kept_from=kept_from)
    return PostgresBatchWriter(engine, kept_from=kept_from)


def _keep_everything() -> None:
    return None


def _ids(op: MessageEdit | MessageKind | MessageDelete) -> tuple[int, ...]:
    return op.message_ids if isinstance(op, MessageDelete) else (op.message_id,)


def _by_message(ops: list[Any] | None) -> list[Any]:
    """Operations in message id order; one message's keep the order they came in."""
    return sorted(ops or [], key=lambda op: op.message_id)
