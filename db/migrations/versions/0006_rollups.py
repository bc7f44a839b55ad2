"""Weekly and monthly rollups per member, persisted once their period is over.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.types import SurrogateKey, UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rollups",
        sa.Column("id", SurrogateKey, primary_key=True, autoincrement=True),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("period", sa.String(8), nullable=False),
        sa.Column("start_date", sa.Date(), nullable=False),
        sa.Column("end_date", sa.Date(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("model", sa.String(100), nullable=False),
        sa.Column("prompt_version", sa.String(20), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("guild_id", "user_id", "period", "start_date", name="uq_rollups_guild_user_period_start"),
    )
    op.create_index("ix_rollups_guild_end", "rollups", ["guild_id", "end_date"])


def downgrade() -> None:
    op.drop_index("ix_rollups_guild_end", table_name="rollups")
    op.drop_table("rollups")
