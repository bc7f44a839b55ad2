"""Spans intake, the embedding worker and storage on purpose: a restart redoes nothing. After an hour of traffic
the bot stops and starts again, and catch-up hands every message of that hour to intake once more (as
`Listener.store_fetched` does): none is embedded again, no vector is stored again, and on PostgreSQL (where a row
version shows it) no message or name row is written again."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from tests.factories import ALICE, BOB, T0, message

HOUR = [
    message(f"hour of traffic line {i} about kayaks and soup", author=(ALICE, BOB)[i % 2], name=("ana", "bob")[i % 2],
            at=T0 + timedelta(seconds=12 * i), message_id=2**60 + 50_000 + i)
    for i in range(300)
]  # fmt: skip


class CountingEmbedder:
    """A deterministic embedder at the model's edge that counts what it is asked to embed."""

    model = "counting"
    dimensions = 4

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def embed(self, texts: list[str], *, task: str) -> list[list[float]]:
        if task == "RETRIEVAL_DOCUMENT":
            self.texts += texts
        return [[1.0, float(len(t) % 7), float(sum(map(ord, t)) % 11), 1.0] for t in texts]


async def run_an_hour(engine, settings, embedder: CountingEmbedder) -> None:
    memory = MemoryManager(engine, settings, clock=FakeClock(T0 + timedelta(hours=1)), embedder=embedder)
    await memory.start()
    try:
        for m in HOUR:
            await memory.intake.message(m)
        await memory.flush()
        assert memory.embedding is not None
        await memory.embedding.idle()
        await memory.flush()
    finally:
        await memory.close()


async def versions(engine) -> dict[str, object]:
    async with engine.connect() as connection:
        found: dict[str, object] = {
            "vectors": (await connection.execute(text("SELECT message_id, id FROM message_vectors"))).all()
        }
        if engine.dialect.name == "postgresql":
            for table in ("chat_history", "member_names"):
                found[table] = (await connection.execute(text(f"SELECT xmin::text FROM {table} ORDER BY 1"))).all()
    return found


async def test_a_restart_after_an_hour_of_traffic_embeds_and_writes_nothing_again(engine, settings):
    first = CountingEmbedder()
    await run_an_hour(engine, settings, first)
    assert len(first.texts) == len(HOUR)
    before = await versions(engine)
    assert len(before["vectors"]) == len(HOUR)  # type: ignore[arg-type]

    again = CountingEmbedder()
    await run_an_hour(engine, settings, again)  # the restart: catch-up reads the same hour back
    assert again.texts == [], f"{len(again.texts)} messages embedded again"
    assert await versions(engine) == before
