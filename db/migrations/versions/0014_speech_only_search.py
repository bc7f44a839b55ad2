"""The full-text index holds members' speech only; the bot's conversation gets a small index of its own.

Questions addressed to the bot, its commands and its own replies were indexed like everything members say, so
a search matched them (a reply repeats the question's words and the memory it was given) and threw them away only
after the join: a guild slowed down with every answer the bot gave (issue 36). Now SQLite's triggers index a row
only while it is speech (kind 0), a row re-kinded in or out follows, and PostgreSQL's generated tsvector is NULL
for the rest. What still needs the conversation (deleting a member's rows, "forget that …" rewriting the bot's
replies, the channel window) reads it through `ix_chat_history_conversation`, an index of those rows alone.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SPEECH = 0  # db.records.Kind.SPEECH (a migration does not import the code it outlives)
_SCOPE = "'g' || {r}.guild_id || ' u' || {r}.user_id"
_ADD = f"INSERT INTO chat_fts(rowid, scope, body) SELECT new.message_id, {_SCOPE.format(r='new')}, new.message_text"
_REMOVE = (
    "INSERT INTO chat_fts(chat_fts, rowid, scope, body) "
    f"SELECT 'delete', old.message_id, {_SCOPE.format(r='old')}, old.message_text"
)
# (SQLite's trigger bodies take INSERT … SELECT … WHERE, so each statement carries its own condition.)
_SQLITE_TRIGGERS = [
    "CREATE TRIGGER chat_fts_insert AFTER INSERT ON chat_history "
    f"WHEN new.kind = {SPEECH} AND NOT EXISTS (SELECT 1 FROM chat_fts_deferred) BEGIN {_ADD}; END",
    f"CREATE TRIGGER chat_fts_delete AFTER DELETE ON chat_history WHEN old.kind = {SPEECH} BEGIN {_REMOVE}; END",
    "CREATE TRIGGER chat_fts_update AFTER UPDATE OF message_text, guild_id, user_id, kind ON chat_history BEGIN "
    f"{_REMOVE} WHERE old.kind = {SPEECH}; {_ADD} WHERE new.kind = {SPEECH}; END",
]
_CONVERSATION = "CREATE INDEX ix_chat_history_conversation ON chat_history (guild_id, timestamp) WHERE kind <> 0"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("chat_fts_insert", "chat_fts_delete", "chat_fts_update"):
            op.execute(f"DROP TRIGGER {name}")
        # The index is contentless: a row leaves it by the very values it was indexed with (its current text;
        # before this revision every row was indexed whatever its kind, and kind was no part of the entry).
        op.execute(
            "INSERT INTO chat_fts(chat_fts, rowid, scope, body) "
            f"SELECT 'delete', message_id, 'g' || guild_id || ' u' || user_id, message_text FROM chat_history "
            f"WHERE kind <> {SPEECH}"
        )
        for statement in _SQLITE_TRIGGERS:
            op.execute(statement)
    else:
        op.execute("DROP INDEX ix_chat_history_search")
        op.execute("ALTER TABLE chat_history DROP COLUMN search")
        op.execute(
            "ALTER TABLE chat_history ADD COLUMN search tsvector GENERATED ALWAYS AS "
            f"(CASE WHEN kind = {SPEECH} THEN to_tsvector('english', message_text) END) STORED"
        )
        op.execute("CREATE INDEX ix_chat_history_search ON chat_history USING gin (search)")
    op.execute(_CONVERSATION)


def downgrade() -> None:
    op.execute("DROP INDEX ix_chat_history_conversation")
    if op.get_bind().dialect.name == "sqlite":
        for name in ("chat_fts_insert", "chat_fts_delete", "chat_fts_update"):
            op.execute(f"DROP TRIGGER {name}")
        op.execute(
            "INSERT INTO chat_fts(rowid, scope, body) "
            f"SELECT message_id, 'g' || guild_id || ' u' || user_id, message_text FROM chat_history "
            f"WHERE kind <> {SPEECH}"
        )
        add, remove = _ADD, _REMOVE
        op.execute(
            "CREATE TRIGGER chat_fts_insert AFTER INSERT ON chat_history "
            f"WHEN NOT EXISTS (SELECT 1 FROM chat_fts_deferred) BEGIN {add}; END"
        )
        op.execute(f"CREATE TRIGGER chat_fts_delete AFTER DELETE ON chat_history BEGIN {remove}; END")
        op.execute(
            "CREATE TRIGGER chat_fts_update AFTER UPDATE OF message_text, guild_id, user_id ON chat_history "
            f"BEGIN {remove}; {add}; END"
        )
    else:
        op.execute("DROP INDEX ix_chat_history_search")
        op.execute("ALTER TABLE chat_history DROP COLUMN search")
        op.execute(
            "ALTER TABLE chat_history ADD COLUMN search tsvector "
            "GENERATED ALWAYS AS (to_tsvector('english', message_text)) STORED"
        )
        op.execute("CREATE INDEX ix_chat_history_search ON chat_history USING gin (search)")
