"""Tombstones: deletions recorded as facts that outlive the data, so no later write can bring it back.

A message deleted in Discord, a forgotten member, a purged channel or a purged span of a guild may still be
held by a writer that has not written yet — this process's queue, another process's queue or spill file, an
import, a catch-up from Discord. Every batch is checked against these rows in the transaction that writes it.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "deleted_messages",
        sa.Column("message_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("at", _UTC, nullable=False),
    )
    op.create_table(
        "tombstones",
        sa.Column("guild_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("kind", sa.String(8), primary_key=True),
        sa.Column("target_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("before", _UTC, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tombstones")
    op.drop_table("deleted_messages")
