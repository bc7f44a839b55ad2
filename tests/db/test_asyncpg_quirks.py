"""asyncpg's TLS-upgrade answer lost with its connection is read, not printed as never retrieved (issue 37, finding
7: "Future exception was never retrieved: ConnectionError('unexpected connection_lost() call')" in outages)."""

from __future__ import annotations

import asyncio
import gc
import ssl

import pytest
from asyncpg import connect_utils

from db.engine import create_engine


def _probe(loop: asyncio.AbstractEventLoop) -> connect_utils.TLSUpgradeProto:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return connect_utils.TLSUpgradeProto(loop, "127.0.0.1", 5432, context, True)


async def test_a_lost_answer_nobody_awaits_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    await create_engine("postgresql+asyncpg://postgres@127.0.0.1:5432/unused").dispose()  # applies the patch
    probe = _probe(asyncio.get_running_loop())
    probe.connection_lost(None)  # the server closed the socket; whoever waited was cancelled before
    del probe
    gc.collect()
    await asyncio.sleep(0)
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_an_attempt_still_waiting_gets_the_error() -> None:
    await create_engine("postgresql+asyncpg://postgres@127.0.0.1:5432/unused").dispose()
    probe = _probe(asyncio.get_running_loop())
    probe.connection_lost(None)
    with pytest.raises(ConnectionError, match="unexpected connection_lost"):
        await probe.on_data
