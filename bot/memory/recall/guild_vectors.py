"""One guild's vector index in memory, with who wrote each indexed message and when, the id sets (faiss
selectors) a search keeps to (a busy member's, the guild's last season's), and in a large guild each member's own
index."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import faiss
import numpy as np

from db.records import MAX_ID

Span = tuple[float, float]  # POSIX seconds

# A member with this many vectors keeps their id set (a faiss selector) between searches, in a guild with an exact
# index (an IVF guild's members have their own): building it took 30–230 ms for a member with half of a 1 M-message
# guild. Vectors added since join it as a small second set
# until there are REBUILD_AFTER of them in the guild.
KEEP_SELECTOR_FROM = 20_000
REBUILD_AFTER = 50_000
_MOMENT = np.uint64(22)  # a snowflake's bits below its millisecond: worker, process, increment
_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: each millisecond's bits spread over the product's top


def held(message_ids: np.ndarray | list[int]) -> np.ndarray:
    """Message ids as the index holds them, and back (the mapping is its own inverse).

    faiss screens an id set (IDSelectorBatch) with a Bloom filter over the ids' low bits, and a snowflake's low 22
    bits take a few hundred values (Discord's workers, processes and small increments): nearly every vector a
    member's search scanned went on to a hash lookup (3.3 ms against 1.5 ms, a member's 10,800 of 173,000). Those
    bits are mixed with a hash of the id's millisecond: each id stays unique and in time order to the millisecond,
    so a time is still a range of ids."""
    ids = np.asarray(message_ids, dtype=np.int64).view(np.uint64)
    return (ids ^ (((ids >> _MOMENT) * _MIX) >> (np.uint64(64) - _MOMENT))).view(np.int64)


@dataclass
class GuildVectors:
    """A guild's faiss index and what a filtered search needs beside it (VectorIndex keeps it current)."""

    index: faiss.Index
    cursor: int = 0  # the newest message_vectors id seen
    size: int = 0
    trained_at: int = 0  # size when the IVF was trained (0: exact index)
    synced: float = field(default_factory=time.monotonic)
    newest: int = -1  # the largest id indexed (as `held`): a message of a later millisecond cannot be indexed yet
    oldest: float = math.inf  # when the oldest indexed message was written (POSIX seconds)
    # Who wrote each indexed message, and when (POSIX seconds): a search can keep to a member or a time. Kept
    # in buffers that grow by half as much again when full: appending to exact-size arrays copied all three
    # (2.4 MB at 100,000 messages) on the event loop for every batch embedded.
    _ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _authors: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _times: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    _noted: int = 0

    selectors: dict[int, tuple[faiss.IDSelector, int]] = field(default_factory=dict)  # busy members', and coverage
    # From which hour (POSIX s), its selector (a range of ids, or a set), how many of `ids` it covers: every
    # question's season (a set took 10 ms to build at 1 M).
    recent: tuple[float, faiss.IDSelector, int] | None = None
    # An IVF guild's members' own indexes (8-bit, exact, ids as held), made from `codec` (trained, empty). A search
    # kept to a member by a selector scanned every list of the guild's index: at 173,000 vectors 5-14 ms, twice a
    # named member, against about 1 ms over a busy member's own 10,000-15,000. They hold each vector a second time
    # (384 bytes).
    members: dict[int, faiss.Index] = field(default_factory=dict)
    codec: faiss.Index | None = None

    @property
    def ids(self) -> np.ndarray:
        return self._ids[: self._noted]

    @property
    def authors(self) -> np.ndarray:
        return self._authors[: self._noted]

    @property
    def times(self) -> np.ndarray:
        return self._times[: self._noted]

    def note(self, ids: np.ndarray, authors: np.ndarray, times: np.ndarray) -> None:
        end = self._noted + len(ids)
        if end > len(self._ids):  # a search holding the old buffers' views keeps reading what they held
            room = max(end, len(self._ids) * 3 // 2, 1024)
            self._ids, self._authors, self._times = (
                np.concatenate([old[: self._noted], np.zeros(room - self._noted, old.dtype)])
                for old in (self._ids, self._authors, self._times)
            )
        self._ids[self._noted : end], self._authors[self._noted : end], self._times[self._noted : end] = (
            ids,
            authors,
            times,
        )
        self._noted = end
        if len(ids):
            self.newest = max(self.newest, int(ids.max()))
            self.oldest = min(self.oldest, float(times.min()))

    def keep_selectors_of(self, ids: np.ndarray, authors: np.ndarray) -> None:
        """Build the busy members' selectors over the first vectors to be noted (in the index's build thread,
        before the first search)."""
        members, counts = np.unique(authors, return_counts=True)
        for author in members[counts >= KEEP_SELECTOR_FROM]:
            self.selectors[int(author)] = (faiss.IDSelectorBatch(ids[authors == author]), len(ids))

    def index_members(self, vectors: np.ndarray, ids: np.ndarray, authors: np.ndarray) -> None:
        """Add vectors to their authors' own indexes (a guild with a codec: an IVF guild's)."""
        if self.codec is None or not len(ids):
            return
        for author in np.unique(authors).tolist():
            own = self.members.get(author)
            if own is None:
                own = self.members[author] = faiss.IndexIDMap(faiss.clone_index(self.codec))
            mine = authors == author
            own.add_with_ids(vectors[mine], ids[mine])

    def remove(self, ids: np.ndarray) -> None:
        """Take vectors (ids as held) out of the guild's index and their authors' own indexes."""
        self.index.remove_ids(ids)  # type: ignore[arg-type]  # faiss's wrapper takes an id array
        if not self.members:
            return
        for author in np.unique(self.authors[np.isin(self.ids, ids)]).tolist():
            if author in self.members:
                self.members[author].remove_ids(ids)  # type: ignore[arg-type]

    def of_author(self, author: int) -> tuple[faiss.IDSelector, ...]:
        """A selector of the member's indexed messages (last), and any it is made of (kept referenced while
        searching: faiss's composite selectors do not own their parts); empty when they have none."""
        kept = self.selectors.get(author)
        if kept is not None and len(self.ids) - kept[1] <= REBUILD_AFTER:
            base, upto = kept
            return self._and_since(base, upto, self.authors[upto:] == author)
        # No np.unique: it sorted half a million ids per question for a busy member (215 ms at 1 M messages).
        chosen = self.ids[self.authors == author]
        if not len(chosen):
            return ()
        selector = faiss.IDSelectorBatch(chosen)
        if len(chosen) >= KEEP_SELECTOR_FROM:
            self.selectors[author] = (selector, len(self.ids))
        return (selector,)

    def from_hour_of(self, moment: float) -> tuple[faiss.IDSelector, ...]:
        """A selector of the messages indexed from the hour `moment` falls in, as `of_author` gives one."""
        hour = math.floor(moment / 3600) * 3600.0
        kept = self.recent
        if kept is not None and kept[0] == hour and isinstance(kept[1], faiss.IDSelectorRange):
            # What was noted since must keep to the range too (an edit's id is old, so is its moment).
            newer = self.ids[kept[2] :] >= kept[1].imin
            if (newer == (self.times[kept[2] :] >= hour)).all():
                return (kept[1],)
            kept = None
        if kept is None or kept[0] != hour or len(self.ids) - kept[2] > REBUILD_AFTER:
            keep = self.times >= hour
            if not keep.any():
                return ()
            # Up to every id to come: what arrives later is newer still.
            selector = self.id_range(keep, MAX_ID) or faiss.IDSelectorBatch(self.ids[keep])
            kept = self.recent = (hour, selector, len(self.ids))
        _, base, upto = kept  # a range just built: nothing noted since it, so it alone
        return self._and_since(base, upto, self.times[upto:] >= hour)

    def id_range(self, keep: np.ndarray, end: int | None = None) -> faiss.IDSelector | None:
        """The ids `keep` picks (a mask over them) as one range, up to `end` (excluded) if given, when no other id
        falls in it; None otherwise. Discord's ids grow with time (a snowflake holds its moment), so a time is a
        range of ids, and a range costs a search a comparison per vector where a set of ids cost it a hash lookup
        (the season's: 5.8 against 20.6 ms at 180,000 vectors)."""
        chosen = self.ids[keep]
        low, high = int(chosen.min()), (int(chosen.max()) + 1 if end is None else end)
        others = self.ids[~keep]
        if ((others >= low) & (others < high)).any():  # console ids, say: the time of the run, not of the message
            return None
        return faiss.IDSelectorRange(low, high)

    def _and_since(self, base: faiss.IDSelector, upto: int, chosen: np.ndarray) -> tuple[faiss.IDSelector, ...]:
        """A kept selector with the vectors noted since it was built that `chosen` picks (a mask over them)."""
        # An edited message's id may be in both sets; a selector is a set, so no np.unique.
        since = self.ids[upto:][chosen]
        if not len(since):
            return (base,)
        extra = faiss.IDSelectorBatch(since)
        return base, extra, faiss.IDSelectorOr(base, extra)

    def keep_to(
        self, author: int | None, window: Span | None, since: float | None, among: np.ndarray | None
    ) -> tuple[faiss.IDSelector, ...]:
        """The selector a search keeps to (last) and its parts; empty: none to search, or with no filter all (ids
        as the index holds them)."""
        if among is not None:
            return (faiss.IDSelectorBatch(among),) if len(among) else ()
        if window is not None:
            keep = (self.times >= window[0]) & (self.times < window[1])
            if author is None and keep.any() and (whole := self.id_range(keep)) is not None:
                return (whole,)
            if author is not None:
                keep &= self.authors == author
            chosen = self.ids[keep]  # an edited message's id may be here twice: a selector is a set
            return (faiss.IDSelectorBatch(chosen),) if len(chosen) else ()
        if since is not None:  # the guild's (a member's own season searched too much: bot/memory/recall/search.py)
            return self.from_hour_of(since)
        return self.of_author(author) if author is not None else ()
