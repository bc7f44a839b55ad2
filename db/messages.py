"""The ingest hot path: batched, idempotent writes of messages, edits and deletes with driver executemany."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.memory.types import IncomingMessage, IngestOp, MessageDelete, MessageEdit
from db.types import UTCDateTime

# SQLAlchemy Core executemany spends most of its time per row; the driver's own executemany with
# pre-built tuples is ~3x faster (see FIELD-NOTES), so the hot path speaks plain SQL.
_UPSERT_MESSAGE = """
INSERT INTO chat_history
    (message_id, guild_id, channel_id, user_id, message_text, timestamp, edited_at, reply_to_id)
VALUES ({p1}, {p2}, {p3}, {p4}, {p5}, {p6}, {p7}, {p8})
ON CONFLICT (message_id) DO UPDATE
SET message_text = excluded.message_text, edited_at = excluded.edited_at
WHERE excluded.edited_at IS NOT NULL
  AND (chat_history.edited_at IS NULL OR chat_history.edited_at < excluded.edited_at)
"""
# Only a newer edit wins, so replays and out-of-order events converge on the latest text; a duplicate
# delivery of the same version changes nothing.
_EDIT_MESSAGE = """
UPDATE chat_history SET message_text = {p1}, edited_at = {p2}
WHERE message_id = {p3} AND (edited_at IS NULL OR edited_at < {p2})
"""
_DELETE_MESSAGE = "DELETE FROM chat_history WHERE message_id = {p1}"
_UPSERT_NAME = """
INSERT INTO member_names (guild_id, user_id, display_name, username, updated_at)
VALUES ({p1}, {p2}, {p3}, {p4}, {p5})
ON CONFLICT (guild_id, user_id) DO UPDATE
SET display_name = excluded.display_name, username = excluded.username, updated_at = excluded.updated_at
WHERE member_names.updated_at <= excluded.updated_at
"""


def _render(sql: str, dialect: Dialect) -> str:
    # Numbered markers (SQLite ?N, asyncpg $N) let one parameter appear twice in a statement.
    prefix = "?" if dialect.paramstyle == "qmark" else "$"
    marks = {f"p{i}": f"{prefix}{i}" for i in range(1, 10)}
    return sql.format(**marks)


class BatchWriter:
    """Writes a batch of ingest operations in order, in one transaction, for one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self._sql = {
            name: _render(sql, dialect)
            for name, sql in (
                ("upsert", _UPSERT_MESSAGE),
                ("edit", _EDIT_MESSAGE),
                ("delete", _DELETE_MESSAGE),
                ("name", _UPSERT_NAME),
            )
        }
        processor = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
        self._time: Callable[[Any], Any] = processor or (lambda value: value)

    async def write(self, connection: AsyncConnection, ops: Sequence[IngestOp]) -> None:
        """Apply `ops` in arrival order; consecutive operations of one kind share one executemany."""
        for kind, group in groupby(ops, key=type):
            items = list(group)
            if kind is IncomingMessage:
                await self._messages(connection, items)
            elif kind is MessageEdit:
                rows = [(e.content, self._time(e.edited_at), e.message_id) for e in items]
                await connection.exec_driver_sql(self._sql["edit"], rows)
            else:
                rows = [(mid,) for d in items for mid in d.message_ids]
                await connection.exec_driver_sql(self._sql["delete"], rows)

    async def _messages(self, connection: AsyncConnection, messages: Iterable[IncomingMessage]) -> None:
        t = self._time
        rows = []
        names: dict[tuple[int, int], tuple[Any, ...]] = {}
        for m in messages:
            created = t(m.created_at)
            rows.append(
                (
                    m.message_id, m.guild_id, m.channel_id, m.author_id, m.content, created,
                    t(m.edited_at), m.reply_to_id,
                )
            )
            names[(m.guild_id, m.author_id)] = (
                m.guild_id, m.author_id, m.author_name[:100], (m.author_username or None), created,
            )
        await connection.exec_driver_sql(self._sql["upsert"], rows)
        await connection.exec_driver_sql(self._sql["name"], list(names.values()))
