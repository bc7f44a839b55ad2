"""Claims with a lease on derived builds (daily summaries, histories, rollups), so that several processes
on one PostgreSQL database call the model once per guild-day.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "build_claims",
        sa.Column("key", sa.String(40), primary_key=True),
        sa.Column("owner", sa.String(32), nullable=False),
        sa.Column("expires", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("build_claims")
