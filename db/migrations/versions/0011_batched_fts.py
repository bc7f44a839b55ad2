"""SQLite: the ingest writer indexes its own rows in one statement per batch, every other insert still by trigger.

FTS5 writes its pending terms out as a new segment at every savepoint, and each row an executemany upserts
through the insert trigger is a statement with its own savepoint: a 1,000-row batch left ~1,000 one-row
segments to merge, and the trigger cost 2-3x the whole insert (bench/ingest.py). The trigger now stands
aside while `chat_fts_deferred` has a row; the ingest writer puts one there inside its transaction, upserts
the batch, indexes the rows it added (`INSERT INTO chat_fts … SELECT … WHERE rowid > the batch's first`) and
removes it again before committing, so no other connection ever sees it set. Any other writer (the ORM,
benchmarks, an old process) is still indexed by the trigger; edits and deletes keep their triggers.
PostgreSQL is unchanged: its tsvector is a generated column and the GIN index already defers with its
pending list.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_INDEX_ROW = (
    "INSERT INTO chat_fts(rowid, scope, body) "
    "VALUES (new.message_id, 'g' || new.guild_id || ' u' || new.user_id, new.message_text);"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE chat_fts_deferred (writer INTEGER NOT NULL)")
    op.execute("DROP TRIGGER chat_fts_insert")
    op.execute(
        "CREATE TRIGGER chat_fts_insert AFTER INSERT ON chat_history "
        f"WHEN NOT EXISTS (SELECT 1 FROM chat_fts_deferred) BEGIN {_INDEX_ROW} END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TRIGGER chat_fts_insert")
    op.execute(f"CREATE TRIGGER chat_fts_insert AFTER INSERT ON chat_history BEGIN {_INDEX_ROW} END")
    op.execute("DROP TABLE chat_fts_deferred")
