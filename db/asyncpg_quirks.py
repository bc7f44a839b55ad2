"""A known asyncpg bug, worked around until a release fixes it (MagicStack/asyncpg#1211, fix proposed in #1312).

Opening a connection with `sslmode=prefer` (asyncpg's default), and sending a query's cancel request, first asks
the server for TLS with a small protocol whose `on_data` future carries the answer. When the server closes that
socket after whoever waited for the answer was cancelled (a pool pre-ping cut short, a reply past its deadline,
the database going away), the future is given a ConnectionError nobody reads, and asyncio prints "Future exception
was never retrieved" with a traceback: during an outage, one per cancelled attempt, breaking the log's one line per
fault state. The exception is read as soon as it is set; an attempt still waiting gets it exactly as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asyncpg import connect_utils

_APPLIED = "_elefant_reads_lost_connection"


def read_lost_tls_answers() -> None:
    """Patch asyncpg's TLS-upgrade protocol once per process (idempotent)."""
    protocol: Any = getattr(connect_utils, "TLSUpgradeProto", None)
    if protocol is None or getattr(protocol, _APPLIED, False):  # gone in a later asyncpg: nothing to do
        return
    lost = protocol.connection_lost

    def connection_lost(self: Any, exc: Exception | None) -> None:
        lost(self, exc)
        answer: asyncio.Future[Any] | None = getattr(self, "on_data", None)
        if answer is not None and answer.done() and not answer.cancelled():
            answer.exception()  # marks it read; an await on it still raises it

    protocol.connection_lost = connection_lost
    setattr(protocol, _APPLIED, True)
