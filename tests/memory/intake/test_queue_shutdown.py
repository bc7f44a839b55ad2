"""SIGTERM mid-burst: every message that ingest_message accepted is in the database afterwards."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from db.models import ChatMessage

ROOT = Path(__file__).resolve().parents[3]


async def test_sigterm_mid_burst_loses_nothing(db_url: str, engine: AsyncEngine):
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.memory.sigterm_child",
        db_url,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "0"},
    )
    assert child.stdout is not None
    assert (await asyncio.wait_for(child.stdout.readline(), 30)).strip() == b"READY"
    await asyncio.sleep(1.0)  # mid-burst
    child.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode == 0, err.decode()
    accepted = {int(line) for line in out.split()}
    pending = int(err.decode().split("PENDING")[1].split()[0])
    assert pending > 0, "the burst should still have been queued when the signal came"
    async with engine.connect() as conn:
        stored = set((await conn.scalars(select(ChatMessage.message_id))).all())
    assert len(accepted) > 1000
    assert accepted <= stored
