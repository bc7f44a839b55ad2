"""Full-text search over messages and daily summaries: FTS5 on SQLite, tsvector + GIN on PostgreSQL.

Both stay in sync with inserts, edits and deletes inside the database itself (SQLite triggers feeding
contentless FTS5 tables keyed by message_id / summary id; PostgreSQL generated columns), so no code path
can forget to update the index, and a deleted message is never found again.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TOKENIZER = "porter unicode61 remove_diacritics 2"  # stems like PostgreSQL's 'english' configuration


def _fts(table: str, source: str, key: str, text: str) -> list[str]:
    """A contentless FTS5 table over `source`, kept in sync by triggers, filled from what is already there.

    `scope` holds "g<guild> u<user>", so a guild (and a member) filter is part of the full-text match itself.
    """
    scope_new = "'g' || new.guild_id || ' u' || new.user_id"
    scope_old = "'g' || old.guild_id || ' u' || old.user_id"
    insert = f"INSERT INTO {table}(rowid, scope, body) VALUES (new.{key}, {scope_new}, new.{text});"
    delete = f"INSERT INTO {table}({table}, rowid, scope, body) VALUES ('delete', old.{key}, {scope_old}, old.{text});"
    return [
        f"CREATE VIRTUAL TABLE {table} USING fts5(scope, body, content='', tokenize='{TOKENIZER}')",
        f"CREATE TRIGGER {table}_insert AFTER INSERT ON {source} BEGIN {insert} END",
        f"CREATE TRIGGER {table}_delete AFTER DELETE ON {source} BEGIN {delete} END",
        f"CREATE TRIGGER {table}_update AFTER UPDATE OF {text}, guild_id, user_id ON {source} "
        f"BEGIN {delete} {insert} END",
        f"INSERT INTO {table}(rowid, scope, body) SELECT {key}, 'g' || guild_id || ' u' || user_id, {text} "
        f"FROM {source}",
    ]


def _tsvector(source: str, text: str) -> list[str]:
    return [
        f"ALTER TABLE {source} ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', {text})) STORED",
        f"CREATE INDEX ix_{source}_search ON {source} USING gin (search)",
    ]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        statements = _fts("chat_fts", "chat_history", "message_id", "message_text")
        statements += _fts("summary_fts", "daily_summaries", "id", "summary")
    else:
        statements = _tsvector("chat_history", "message_text") + _tsvector("daily_summaries", "summary")
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in (
            "chat_fts_insert",
            "chat_fts_delete",
            "chat_fts_update",
            "summary_fts_insert",
            "summary_fts_delete",
            "summary_fts_update",
        ):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS chat_fts")
        op.execute("DROP TABLE IF EXISTS summary_fts")
    else:
        op.execute("DROP INDEX IF EXISTS ix_chat_history_search")
        op.execute("ALTER TABLE chat_history DROP COLUMN IF EXISTS search")
        op.execute("DROP INDEX IF EXISTS ix_daily_summaries_search")
        op.execute("ALTER TABLE daily_summaries DROP COLUMN IF EXISTS search")
