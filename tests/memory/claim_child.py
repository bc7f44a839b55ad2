"""A separate process on the shared PostgreSQL database, for the claim tests.

    python -m tests.memory.claim_child day  DATABASE_URL STUB_URL DAY   # READY, waits for "go", summarises DAY
    python -m tests.memory.claim_child hold DATABASE_URL LEASE DAY      # claims DAY's build, CLAIMED, never ends

`day` prints the day's summaries as JSON; `hold` is a process that crashes mid-build (the test kills it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, date, datetime

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.summaries.claims import Claims
from bot.settings import Settings
from db.engine import create_engine, create_session_factory
from fakes.models import model_stack
from tests.factories import GUILD

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


async def summarise(url: str, stub_url: str, day: date) -> None:
    engine = create_engine(url)
    llm = model_stack(stub_url)
    memory = MemoryManager(engine, Settings(_env_file=None, database_url=url), llm=llm, clock=FakeClock(NOON))  # type: ignore[call-arg]
    await memory.start()
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # all three start together
    assert memory.summaries is not None
    found = await memory.summaries.past_day(GUILD, day)
    print(json.dumps({str(k): v for k, v in sorted(found.items())}), flush=True)
    await memory.close()
    await llm.close()
    await engine.dispose()


async def hold(url: str, lease: float, day: date) -> None:
    engine = create_engine(url)
    claims = Claims(create_session_factory(engine), enabled=True, lease=lease)

    async def stuck() -> None:
        print("CLAIMED", flush=True)
        await asyncio.Event().wait()  # the model never answers; the process is killed here

    async def nothing() -> None:
        return None

    await claims.once(("day", GUILD, day), load=nothing, build=stuck)


if __name__ == "__main__":
    mode, url, arg, day = sys.argv[1:5]
    if mode == "day":
        asyncio.run(summarise(url, arg, date.fromisoformat(day)))
    else:
        asyncio.run(hold(url, float(arg), date.fromisoformat(day)))
