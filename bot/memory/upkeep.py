"""The query planner's statistics kept true as the guild grows: after every burst of stored messages, and hourly.

An import, a long catch-up after downtime, a spill file replayed and ordinary growth all change a table's size;
plans made from statistics of another size cost seconds a search (db/statistics.py). The check is cheap (a count
per table), so it runs once `REFRESH_ROWS` new messages were stored since the last one, and at least hourly.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from db import statistics

log = logging.getLogger(__name__)
REFRESH_ROWS = 20_000  # new messages stored since the last check that call for another
CHECK_SECONDS = 60.0
HOURLY = 3600.0


class PlannerStatistics:
    """Runs `db.statistics.refresh` in the background when enough was stored, or an hour passed."""

    def __init__(self, engine: AsyncEngine, stored: Callable[[], int]) -> None:
        self._engine = engine
        self._stored = stored  # messages this process has stored so far (a counter that only grows)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin checking in the background."""
        self._task = asyncio.create_task(self._run(), name="elefant-statistics")

    async def refresh(self) -> list[str]:
        """Check now (an import's end); the tables analysed again."""
        return await statistics.refresh(self._engine)

    async def _run(self) -> None:
        seen, checked = -REFRESH_ROWS, -HOURLY  # the first check a minute after start (start-up has its own work)
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            now, stored = time.monotonic(), self._stored()
            if stored - seen >= REFRESH_ROWS or now - checked >= HOURLY:
                seen, checked = stored, now
                try:
                    await self.refresh()
                except Exception:  # statistics are an optimisation; the next check tries again
                    log.warning("updating the query planner's statistics failed", exc_info=True)

    async def close(self) -> None:
        """Stop checking."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
