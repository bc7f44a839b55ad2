"""The replies index holds replies only: `reply_to_id IS NOT NULL`.

Most messages reply to nothing, and SQLite's statistics count a NULL key like any other: to its planner the
whole index looked like one key matching every row, so "the replies to these messages" (recall's turns
around a hit) scanned the guild's messages instead (7–14 ms at 100,000 messages). Without the NULLs the index
is small and its statistics say what a lookup costs; PostgreSQL uses the partial index for the same `IN`.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_REPLIES = sa.text("reply_to_id IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_chat_history_reply_to", "chat_history")
    op.create_index(
        "ix_chat_history_reply_to", "chat_history", ["reply_to_id"], sqlite_where=_REPLIES, postgresql_where=_REPLIES
    )


def downgrade() -> None:
    op.drop_index("ix_chat_history_reply_to", "chat_history")
    op.create_index("ix_chat_history_reply_to", "chat_history", ["reply_to_id"])
