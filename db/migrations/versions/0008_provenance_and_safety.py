"""What memory keeps is true and complete: message kinds, thread parents, folded names, dead letters, a change
log for other processes, the sources of the bot's replies, and FTS5 secure-delete where SQLite has it.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.types import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SECURE_DELETE = (3, 44, 0)  # the first SQLite whose FTS5 has the secure-delete option


def _surrogate() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True)


def upgrade() -> None:
    bind = op.get_bind()
    _columns_and_name_keys(bind)
    _provenance_tables()
    if bind.dialect.name == "sqlite":
        version = tuple(int(p) for p in bind.execute(sa.text("SELECT sqlite_version()")).scalar_one().split("."))
        if version >= SECURE_DELETE:
            for table in ("chat_fts", "summary_fts"):
                op.execute(f"INSERT INTO {table}({table}, rank) VALUES ('secure-delete', 1)")


def _columns_and_name_keys(bind: sa.engine.Connection) -> None:
    op.add_column("chat_history", sa.Column("kind", sa.SmallInteger(), nullable=False, server_default="0"))
    op.add_column("channel_privacy", sa.Column("parent_id", sa.BigInteger(), nullable=True))
    op.add_column("channel_privacy", sa.Column("channel_type", sa.String(24), nullable=True))
    op.add_column("member_names", sa.Column("display_key", sa.String(100), nullable=True))
    op.add_column("member_names", sa.Column("username_key", sa.String(100), nullable=True))
    names = sa.table(
        "member_names",
        sa.column("guild_id", sa.BigInteger()),
        sa.column("user_id", sa.BigInteger()),
        sa.column("display_name", sa.String()),
        sa.column("username", sa.String()),
        sa.column("display_key", sa.String()),
        sa.column("username_key", sa.String()),
    )
    # SQL's lower() folds ASCII only on SQLite: the keys are folded here, in Python, as the code does.
    for guild_id, user_id, display, username in bind.execute(
        sa.select(names.c.guild_id, names.c.user_id, names.c.display_name, names.c.username)
    ).all():
        bind.execute(
            names.update()
            .where(names.c.guild_id == guild_id, names.c.user_id == user_id)
            .values(display_key=display.casefold()[:100], username_key=username.casefold()[:100] if username else None)
        )
    op.create_index("ix_member_names_guild_display_key", "member_names", ["guild_id", "display_key"])
    op.create_index("ix_member_names_guild_username_key", "member_names", ["guild_id", "username_key"])


def _provenance_tables() -> None:
    op.create_table(
        "dead_letters",
        _surrogate(),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=True),
        sa.Column("channel_id", sa.BigInteger(), nullable=True),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
    )
    op.create_index("ix_dead_letters_guild_user", "dead_letters", ["guild_id", "user_id"])
    op.create_table(
        "memory_changes",
        _surrogate(),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("what", sa.String(24), nullable=False),
        sa.Column("origin", sa.String(32), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_memory_changes_guild_id", "memory_changes", ["guild_id", "id"])
    op.create_table(
        "reply_sources",
        _surrogate(),
        sa.Column("reply_id", sa.BigInteger(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_reply_sources_reply", "reply_sources", ["reply_id"])
    op.create_index("ix_reply_sources_guild_user", "reply_sources", ["guild_id", "user_id"])
    op.create_index("ix_reply_sources_message", "reply_sources", ["message_id"])


def downgrade() -> None:
    for table in ("reply_sources", "memory_changes", "dead_letters"):
        op.drop_table(table)
    op.drop_index("ix_member_names_guild_username_key", "member_names")
    op.drop_index("ix_member_names_guild_display_key", "member_names")
    with op.batch_alter_table("member_names") as batch:
        batch.drop_column("username_key")
        batch.drop_column("display_key")
    with op.batch_alter_table("channel_privacy") as batch:
        batch.drop_column("channel_type")
        batch.drop_column("parent_id")
    with op.batch_alter_table("chat_history") as batch:
        batch.drop_column("kind")
