"""Opt-outs kept as spans: what a member said while opted out is never stored, even after they opt back in.

`user_optouts` holds who is opted out now (from `at`); opting back in used to delete that row and with it the
fact that anything was withheld, so a catch-up, an import or a spill file replayed later stored what was said
meanwhile. Opting in now closes the span here. The member is named by the digest tombstones use, not their id.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "optout_spans",
        sa.Column("guild_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("member_key", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("since", _UTC, primary_key=True),
        sa.Column("until", _UTC, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("optout_spans")
