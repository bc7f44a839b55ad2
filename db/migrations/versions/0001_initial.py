"""Initial schema: messages, facts and their revisions, daily summaries, names, guild settings, opt-outs.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from db.types import SurrogateKey, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = sa.BigInteger


def upgrade() -> None:
    _speech_and_facts()
    _summaries_and_members()


def _speech_and_facts() -> None:
    op.create_table(
        "chat_history",
        sa.Column("message_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("guild_id", ID(), nullable=False),
        sa.Column("channel_id", ID(), nullable=False),
        sa.Column("user_id", ID(), nullable=False),
        sa.Column("message_text", sa.Text(), nullable=False),
        sa.Column("timestamp", UTCDateTime(), nullable=False),
        sa.Column("edited_at", UTCDateTime(), nullable=True),
        sa.Column("reply_to_id", ID(), nullable=True),
    )
    op.create_index("ix_chat_history_guild_user_ts", "chat_history", ["guild_id", "user_id", "timestamp"])
    op.create_index("ix_chat_history_guild_ts", "chat_history", ["guild_id", "timestamp"])

    op.create_table(
        "user_facts",
        sa.Column("guild_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("user_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("memory_blob", sa.Text(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )

    op.create_table(
        "fact_revisions",
        sa.Column("id", SurrogateKey, primary_key=True, autoincrement=True),
        sa.Column("guild_id", ID(), nullable=False),
        sa.Column("user_id", ID(), nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("old_blob", sa.Text(), nullable=False),
        sa.Column("new_blob", sa.Text(), nullable=False),
        sa.Column("requested_by", ID(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_fact_revisions_guild_user", "fact_revisions", ["guild_id", "user_id", "id"])


def _summaries_and_members() -> None:
    op.create_table(
        "daily_summaries",
        sa.Column("id", SurrogateKey, primary_key=True, autoincrement=True),
        sa.Column("guild_id", ID(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("user_id", ID(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("model", sa.String(100), nullable=False),
        sa.Column("prompt_version", sa.String(20), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("guild_id", "day", "user_id", name="uq_daily_summaries_guild_day_user"),
    )

    op.create_table(
        "member_names",
        sa.Column("guild_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("user_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("display_name", sa.String(100), nullable=False),
        sa.Column("username", sa.String(100), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )

    op.create_table(
        "guild_settings",
        sa.Column("guild_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("timezone", sa.String(64), nullable=True),
        sa.Column("facts_policy", sa.String(20), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )

    op.create_table(
        "user_optouts",
        sa.Column("guild_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("user_id", ID(), primary_key=True, autoincrement=False),
        sa.Column("at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    for table in (
        "user_optouts",
        "guild_settings",
        "member_names",
        "daily_summaries",
        "fact_revisions",
        "user_facts",
        "chat_history",
    ):
        op.drop_table(table)
