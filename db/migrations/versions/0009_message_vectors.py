"""One vector per stored message, for semantic recall: int8 with a scale, deleted with its message.

The content-hash cache of embeddings (0007) goes: vectors now belong to messages, so a deleted message
takes its vector with it (ON DELETE CASCADE) and nothing has to remember to drop it.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_table("embeddings")
    op.create_table(
        "message_vectors",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column(
            "message_id",
            sa.BigInteger(),
            sa.ForeignKey("chat_history.message_id", ondelete="CASCADE", name="fk_message_vectors_message"),
            nullable=False,
            unique=True,
        ),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.String(64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("scale", sa.REAL(), nullable=False),
    )
    op.create_index("ix_message_vectors_guild_id", "message_vectors", ["guild_id", "id"])
    # Conversation-aware recall reads the turns around a hit: the previous / next message of its channel, and
    # the replies to it.
    op.create_index("ix_chat_history_channel_message", "chat_history", ["channel_id", "message_id"])
    op.create_index("ix_chat_history_reply_to", "chat_history", ["reply_to_id"])


def downgrade() -> None:
    op.drop_index("ix_chat_history_reply_to", "chat_history")
    op.drop_index("ix_chat_history_channel_message", "chat_history")
    op.drop_table("message_vectors")
    op.create_table(
        "embeddings",
        sa.Column("guild_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("content_hash", sa.String(32), primary_key=True),
        sa.Column("model", sa.String(100), primary_key=True),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
