"""What the write-behind queue counts (for /memory stats, benchmarks and the importer's report)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class IngestStats:
    """Counters for /memory stats and benchmarks."""

    accepted: int = 0
    written: int = 0
    batches: int = 0
    failed_attempts: int = 0
    busy_retries: int = 0  # a deadlock or a lock wait that ran out, retried without counting as storage down
    overflowed: int = 0  # accepted while the queue was full: kept on disk until storage caught up
    recovered: int = 0  # left in spill files by an earlier process on this database, replayed at start
    spilled: int = 0  # not stored before a stop: kept in a spill file for the next start
    dead_letters: int = 0
    new_messages: int = 0  # messages stored that were not there before
    known_messages: int = 0  # messages that were stored already (replays, a second import)


@dataclass(frozen=True, slots=True)
class StoredCounts:
    """Messages stored new, found stored already and kept as dead letters; the difference of two is a span's."""

    new: int = 0
    known: int = 0
    dead_letters: int = 0

    def __sub__(self, earlier: StoredCounts) -> StoredCounts:
        return StoredCounts(
            self.new - earlier.new, self.known - earlier.known, self.dead_letters - earlier.dead_letters
        )


class GaveUpError(Exception):
    """The stop's time for storage ran out while a write was still waiting for it."""
