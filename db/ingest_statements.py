"""The SQL the ingest path writes with, its markers rendered for each driver's own executemany (db/messages.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Dialect

from db.records import Kind

# SQLAlchemy Core executemany spends most of its time per row; the driver's own executemany with
# pre-built tuples is ~3x faster (see FIELD-NOTES), so the hot path speaks plain SQL.
# A message delivered again changes nothing unless it carries a newer edit, so replays, imports and
# out-of-order events all converge on the latest text.
UPSERT_MESSAGE = """
INSERT INTO chat_history
    (message_id, guild_id, channel_id, user_id, message_text, timestamp, edited_at, reply_to_id, kind)
VALUES ({p1}, {p2}, {p3}, {p4}, {p5}, {p6}, {p7}, {p8}, {p9})
ON CONFLICT (message_id) DO UPDATE
SET message_text = excluded.message_text, edited_at = excluded.edited_at
WHERE excluded.edited_at IS NOT NULL
  AND (chat_history.edited_at IS NULL OR chat_history.edited_at < excluded.edited_at)
"""
EDIT_MESSAGE = """
UPDATE chat_history SET message_text = {p1}, edited_at = {p2}
WHERE message_id = {p3} AND (edited_at IS NULL OR edited_at < {p2})
"""
DELETE_MESSAGE = "DELETE FROM chat_history WHERE message_id = {p1}"
KIND_MESSAGE = "UPDATE chat_history SET kind = {p1} WHERE message_id = {p2}"
# A message read again (catch-up re-reads an hour at every connect) rewrites its author's row only if the name it
# carries is newer, or is another name at the same moment (a member renamed while the bot was away).
UPSERT_NAME = """
INSERT INTO member_names (guild_id, user_id, display_name, username, updated_at, display_key, username_key)
VALUES ({p1}, {p2}, {p3}, {p4}, {p5}, {p6}, {p7})
ON CONFLICT (guild_id, user_id) DO UPDATE
SET display_name = excluded.display_name, username = excluded.username, updated_at = excluded.updated_at,
    display_key = excluded.display_key, username_key = excluded.username_key
WHERE member_names.updated_at < excluded.updated_at
   OR (member_names.updated_at = excluded.updated_at
       AND (member_names.display_name <> excluded.display_name
            OR coalesce(member_names.username, '') <> coalesce(excluded.username, '')))
"""
DEAD_LETTER = """
INSERT INTO dead_letters (at, guild_id, channel_id, user_id, message_id, reason, payload)
VALUES ({p1}, {p2}, {p3}, {p4}, {p5}, {p6}, {p7})
"""
REPLY_SOURCE = "INSERT INTO reply_sources (reply_id, guild_id, user_id, message_id) VALUES ({p1}, {p2}, {p3}, {p4})"
# Only while the message is stored and still says what was embedded: a vector computed for a message deleted or
# edited meanwhile is dropped quietly (an edit that landed while the old text was being embedded would otherwise
# leave the old meaning behind: the edit's own re-embedding comes from the backlog).
# A vector stored again (a new embedding model replacing the old ones, a replay) takes a new id: other processes
# sync their indexes by id, and one updated in place stayed behind their cursor, unseen until a restart.
VECTOR = """
INSERT INTO message_vectors (message_id, guild_id, model, vector, scale)
SELECT {p1}, {p2}, {p3}, {p4}, {p5} WHERE EXISTS (
    SELECT 1 FROM chat_history
    WHERE message_id = {p1} AND (CAST({p6} AS TEXT) IS NULL OR message_text = CAST({p6} AS TEXT))
)
ON CONFLICT (message_id) DO UPDATE
SET id = {next_id}, model = excluded.model, vector = excluded.vector, scale = excluded.scale
"""
TOUCHED = "SELECT message_id, guild_id, user_id, timestamp FROM chat_history WHERE message_id IN ({marks})"
# SQLite: while chat_fts_deferred has a row, the insert trigger stands aside and the writer indexes the rows its
# upsert added in one statement (migration 0010: a trigger per row costs a full-text segment per row).
DEFER_INDEX = "INSERT INTO chat_fts_deferred (writer) VALUES (1)"
END_DEFER = "DELETE FROM chat_fts_deferred"
LAST_ROWID = "SELECT coalesce(max(rowid), 0) FROM chat_history"
# Speech only (migration 0014): the bot's conversation is never a search's to find.
INDEX_ADDED = (
    "INSERT INTO chat_fts (rowid, scope, body) "
    "SELECT message_id, 'g' || guild_id || ' u' || user_id, message_text FROM chat_history "
    f"WHERE rowid > ? AND kind = {int(Kind.SPEECH)}"
)
GUILDS_OF = "SELECT DISTINCT guild_id FROM chat_history WHERE message_id = any($1::bigint[])"  # PostgreSQL
KNOWN = "SELECT count(*) FROM chat_history WHERE message_id = any($1::bigint[])"
# The upsert in two statements, for SQLite's batches: an INSERT that may update runs the update triggers'
# machinery for every row (measured: a fifth of the insert's time), so new rows are only inserted and the
# edits a replay carries are applied after, by the edit statement's rule (a newer edited_at wins).
INSERT_NEW = UPSERT_MESSAGE[: UPSERT_MESSAGE.index("ON CONFLICT")] + "ON CONFLICT (message_id) DO NOTHING"

Statement = tuple[str, list[tuple[Any, ...]]]  # SQL and its rows, for executemany


def render(sql: str, dialect: Dialect) -> str:
    """The statement with its markers for the dialect's driver, and the vectors' next id."""
    # Numbered markers (SQLite ?N, asyncpg $N) let one parameter appear twice in a statement.
    prefix = "?" if dialect.paramstyle == "qmark" else "$"
    # A new surrogate id: PostgreSQL's sequence; SQLite's next rowid (one writer holds the file).
    next_id = "(SELECT max(id) + 1 FROM message_vectors)" if dialect.name == "sqlite" else "DEFAULT"
    return sql.format(next_id=next_id, **{f"p{i}": f"{prefix}{i}" for i in range(1, 10)})
