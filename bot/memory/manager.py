"""MemoryManager: the one entry point the rest of the bot uses for everything it remembers."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.memory.ingest import WriteBehindQueue
from bot.memory.types import IncomingMessage, MessageDelete, MessageEdit
from bot.settings import Settings
from db.engine import create_session_factory
from db.models import UserOptOut

log = logging.getLogger(__name__)


class MemoryManager:
    """Owns ingestion and (later) facts, summaries and context for every guild."""

    def __init__(self, engine: AsyncEngine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.sessions = create_session_factory(engine)
        self.ingest = WriteBehindQueue(
            engine,
            batch_rows=settings.ingest_batch_rows,
            flush_ms=settings.ingest_flush_ms,
            max_queue=settings.ingest_queue_max,
        )
        self._optouts: set[tuple[int, int]] = set()

    async def start(self) -> None:
        """Load what ingestion needs to decide (opt-outs) and start the write-behind worker."""
        async with self.sessions() as session:
            rows = await session.execute(select(UserOptOut.guild_id, UserOptOut.user_id))
            self._optouts = {(g, u) for g, u in rows}
        self.ingest.start()

    async def ingest_message(self, message: IncomingMessage) -> bool:
        """Queue a guild message for storage; False when its author opted out (nothing is kept)."""
        if (message.guild_id, message.author_id) in self._optouts:
            return False
        if not self.ingest.offer(message):  # the common case costs no extra coroutine
            await self.ingest.put(message)
        return True

    async def ingest_edit(self, message_id: int, content: str, edited_at: datetime) -> None:
        """Queue new text for a stored message."""
        await self.ingest.put(MessageEdit(message_id, content, edited_at))

    async def ingest_delete(self, message_ids: Iterable[int]) -> None:
        """Queue the removal of one or many messages (bulk deletes included)."""
        ids = tuple(message_ids)
        if ids:
            await self.ingest.put(MessageDelete(ids))

    async def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        await self.ingest.flush()

    async def close(self) -> None:
        """Drain the queue and stop background work; the engine stays open for its owner to dispose."""
        await self.ingest.close()
