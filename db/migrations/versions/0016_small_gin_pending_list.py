"""PostgreSQL: the message index's pending list kept small, so that no search reads megabytes of it.

A GIN index gathers new entries in a pending list (4 MB by default) and merges them into the index when the list
is full or a vacuum runs; until then every search scans the whole list. In a guild that is written to all day the
list is anywhere between empty and full; on bench.soak's guild imported up to month 12 (the list full) each GIN
scan of a question's words took 7–61 ms, also scans finding a dozen rows (docs/benchmarks.md, bench.soak). 256 kB
keeps that scan short; an insert that fills it merges 256 kB instead of 4 MB, more often. SQLite's full-text index
has no such list.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

PENDING_KB = 256


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.execute(f"ALTER INDEX ix_chat_history_search SET (gin_pending_list_limit = {PENDING_KB})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.execute("ALTER INDEX ix_chat_history_search RESET (gin_pending_list_limit)")
