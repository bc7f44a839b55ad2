"""Child process for the SIGTERM test: ingests a burst until told to stop, printing each accepted ID."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from bot.lifecycle import stop_on_signals
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage
from bot.settings import Settings
from db.engine import create_engine


async def main(url: str) -> None:
    engine = create_engine(url)
    manager = MemoryManager(engine, Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    await manager.start()
    stop = asyncio.Event()
    stop_on_signals(stop)
    print("READY", flush=True)
    base = 2**60 + 5_000_000
    i = 0
    while not stop.is_set():
        msg = IncomingMessage(
            2**60, 2**60 + 1, base + i, 2**60 + 2 + i % 40, f"u{i % 40}", f"burst {i}", datetime.now(UTC)
        )
        await manager.intake.message(msg)
        sys.stdout.write(f"{msg.message_id}\n")
        i += 1
        if i % 200 == 0:
            await asyncio.sleep(0)  # let the signal handler and the writer run, as the gateway would
    print(f"PENDING {manager.queue.pending}", file=sys.stderr, flush=True)
    await manager.close()
    await engine.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
