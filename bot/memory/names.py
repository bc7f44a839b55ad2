"""Display names: resolving a typed name to members, and rendering IDs as names for prompts and replies."""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.caches import drop_entries
from bot.memory.coherence import Generations
from bot.text import MENTION
from db import names as store
from db.names import fold

__all__ = ["MENTION", "NameDirectory", "unnamed"]
Known = tuple[str, str | None]  # display name, username
BOOK_SECONDS = 60  # how often a guild's book reads the names stored lately (renames by other processes)
LATELY = timedelta(hours=1)  # "lately": stored up to this long before the newest name read (clocks, late writers)
NAMES_HELD = 200_000  # names held in memory over all guilds (~450 bytes each)
READS = 3  # reads of a guild's names one reply tries while purges keep dropping them
BOOK_MAX = 25_000  # a guild with more names is looked up in SQL per reply instead (read whole, ~100 ms a reply)


class _Book:
    """One guild's names, as read from `member_names` and noted since, with their lookup index."""

    def __init__(self) -> None:
        self.known: dict[int, Known] = {}
        self._index: dict[str, int | set[int]] = {}  # a set only for a name several members share
        self.newest: datetime | None = None  # the latest `updated_at` read (never past the clock)
        self.read_at = -math.inf

    def set(self, user_id: int, name: Known) -> int:
        """Record a member's name; how many members the book has more (0 or 1)."""
        old = self.known.get(user_id)
        if old == name:  # every message notes its author: usually nothing changes
            return 0
        for key in _keys(old):
            ids = self._index.get(key)
            if ids == user_id:
                del self._index[key]
            elif isinstance(ids, set):
                ids.discard(user_id)
                if len(ids) == 1:
                    self._index[key] = next(iter(ids))
        self.known[user_id] = name
        for key in _keys(name):
            ids = self._index.setdefault(key, user_id)
            if isinstance(ids, set):
                ids.add(user_id)
            elif ids != user_id:
                self._index[key] = {ids, user_id}
        return old is None

    def lookup(self, key: str) -> list[int]:
        ids = self._index.get(key)
        return [] if ids is None else [ids] if isinstance(ids, int) else sorted(ids)


def unnamed(user_id: int | str) -> str:
    """What a member without a known name is called: neutral, and never a ping."""
    return f"member {str(user_id)[-4:]}"


def _keys(name: Known | None) -> set[str]:
    return {key for n in name or () if n and (key := fold(n))}


class _Books:
    """The books held, least recently asked first out, NAMES_HELD names in all (counted as they grow)."""

    def __init__(self) -> None:
        self._books: OrderedDict[int, _Book] = OrderedDict()
        self.held = 0

    def get(self, guild_id: int, *, asked: bool = True) -> _Book | None:
        book = self._books.get(guild_id)
        if book is not None and asked:
            self._books.move_to_end(guild_id)
        return book

    def put(self, guild_id: int, book: _Book) -> None:
        self.pop(guild_id)
        self._books[guild_id] = book
        self.grew(len(book.known))

    def grew(self, names: int) -> None:
        self.held += names
        while self.held > NAMES_HELD and len(self._books) > 1:
            _, gone = self._books.popitem(last=False)
            self.held -= len(gone.known)

    def pop(self, guild_id: int) -> None:
        if (book := self._books.pop(guild_id, None)) is not None:
            self.held -= len(book.known)

    def __contains__(self, guild_id: int) -> bool:
        return guild_id in self._books

    def __len__(self) -> int:
        return len(self._books)


class NameDirectory:
    """Looks members up by name in `member_names` (kept current by ingestion).

    A guild's names are read once into memory (then no statement while replies resolve and render names); every
    BOOK_SECONDS the book reads the names stored lately (renames stored by other processes). At most NAMES_HELD
    names are held (least recently asked guilds go first); a guild with more than BOOK_MAX names is looked up in
    SQL on each call instead (one indexed statement). Ingestion is write-behind, so names seen in the last
    moments may not be in SQL yet: `note` puts them in the book and in a small overlay that a book read later
    takes over. Whatever deletes or adds names in bulk (a purge, a forgotten member, an import) drops the
    guild's book (`drop`), here and, through the change feed, in other processes.
    """

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        recent: int = 10_000,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        # Noted names, oldest noted first out; an OrderedDict so that reading it never reorders it.
        self._recent: OrderedDict[tuple[int, int], Known] = OrderedDict()
        self._recent_max = recent
        self._books = _Books()
        self._big: TTLCache[int, bool] = TTLCache(maxsize=4096, ttl=600)  # guilds looked up in SQL (counted lately)
        self._timer = timer
        self._dropped = Generations()  # per guild: a book read while it was dropped is not kept
        self._reading: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()

    def note(self, guild_id: int, user_id: int, display_name: str, username: str | None) -> None:
        """Remember the name a member was just seen with."""
        key, name = (guild_id, user_id), (display_name, username)
        self._recent[key] = name
        self._recent.move_to_end(key)
        if len(self._recent) > self._recent_max:
            self._recent.popitem(last=False)
        if (book := self._books.get(guild_id, asked=False)) is not None:  # a message is no question
            self._books.grew(book.set(user_id, name))

    async def store(
        self, guild_id: int, user_id: int, display_name: str, username: str | None, *, at: datetime
    ) -> None:
        """Write a name straight to `member_names` (name changes are rare; messages go through ingestion)."""
        async with self._sessions() as session, session.begin():
            await store.store(session, guild_id, user_id, display_name, username, at=at)

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget cached names of a member, or of a whole guild (after a purge, an import)."""
        drop_entries(self._recent, guild_id, user_id)
        self._books.pop(guild_id)
        self._dropped.bump(guild_id)

    async def _book(self, guild_id: int) -> _Book | None:
        """The guild's names in memory, read or brought up to date as needed; None: a big guild (SQL per call)."""
        read: _Book | None = None
        for _ in range(READS):
            if (book := self._fresh(guild_id)) is not None:
                return book
            if guild_id in self._big:
                return None
            lock = self._reading.setdefault(guild_id, asyncio.Lock())
            async with lock:  # one read per guild at a time: replies arriving together share it
                if (book := self._fresh(guild_id)) is not None:  # read by the reply this one waited for
                    return book
                kept, read = await self._read(guild_id, self._books.get(guild_id))
                if kept:
                    return read
            # Dropped while it was read (a member forgotten): what was read may hold them; read again.
        return read  # dropped during every read: this reply has the last one, which is not kept

    def _fresh(self, guild_id: int) -> _Book | None:
        """The guild's book, if it was read less than BOOK_SECONDS ago."""
        book = self._books.get(guild_id)
        return book if book is not None and self._timer() - book.read_at < BOOK_SECONDS else None

    async def _read(self, guild_id: int, book: _Book | None) -> tuple[bool, _Book | None]:
        """Read the guild's names (or those stored lately, into `book`); False: dropped meanwhile, not kept."""
        generation = self._dropped.of(guild_id)
        since = book.newest - LATELY if book is not None and book.newest is not None else None
        async with self._sessions() as session:
            if book is None and await store.count(session, guild_id) > BOOK_MAX:
                self._big[guild_id] = True
                return True, None
            rows = await store.names_since(session, guild_id, since)
        if self._dropped.of(guild_id) != generation:
            return False, None
        first = book is None
        book = book or _Book()
        clock = datetime.now(UTC)
        for user_id, display, username, at in rows:
            if first or (guild_id, user_id) not in self._recent:  # a name noted here is at least as new
                book.set(user_id, (display, username))
            # A stamp from a clock ahead of ours must not hide what is stored after it.
            newest = min(at, clock)
            book.newest = newest if book.newest is None else max(book.newest, newest)
        if first:
            for (guild, user_id), name in self._recent.items():
                if guild == guild_id:
                    book.set(user_id, name)  # noted since (or not yet written): the newest name wins
        book.read_at = self._timer()
        if len(book.known) > BOOK_MAX:  # grew past it since it was first read
            self._books.pop(guild_id)
            self._big[guild_id] = True
            return True, None
        self._books.put(guild_id, book)  # (again: the names it holds are counted anew)
        return True, book

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """User IDs whose display name or username equals `name` (case-insensitive); several = ambiguous."""
        return (await self.resolve_all(guild_id, [name])).get(name, [])

    async def resolve_all(self, guild_id: int, names: list[str]) -> dict[str, list[int]]:
        """`resolve` of several names (the words of a question): name -> user IDs."""
        wanted = {name: fold(name.strip().lstrip("@")) for name in names}
        if not any(wanted.values()):
            return {}
        if (book := await self._book(guild_id)) is not None:
            return {name: book.lookup(key) for name, key in wanted.items() if key}
        async with self._sessions() as session:
            stored = await store.matching(session, guild_id, sorted({key for key in wanted.values() if key}))
        for (guild, user_id), known in self._recent.items():
            if guild == guild_id:
                stored[user_id] = known  # the newest name wins, also when it no longer matches
        folded = {user_id: _keys(known) for user_id, known in stored.items()}
        return {
            name: sorted(u for u, keys_of in folded.items() if key in keys_of) for name, key in wanted.items() if key
        }

    async def names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names for `user_ids`; unknown IDs are left out."""
        if not user_ids:
            return {}
        if (book := await self._book(guild_id)) is not None:
            return {u: book.known[u][0] for u in user_ids if u in book.known}
        found = {u: self._recent[(guild_id, u)][0] for u in user_ids if (guild_id, u) in self._recent}
        if missing := user_ids - found.keys():
            async with self._sessions() as session:
                found |= await store.display_names(session, guild_id, missing)
        return found

    async def name(self, guild_id: int, user_id: int) -> str:
        """One display name, or a neutral placeholder that never pings."""
        return (await self.names(guild_id, {user_id})).get(user_id, unnamed(user_id))

    async def render_mentions(self, guild_id: int, text: str, *, at: bool = True) -> str:
        """Replace `<@id>` mentions by `@name` (or `name`), so the model sees names and nothing echoes a ping."""
        return (await self.render_all(guild_id, [text], at=at))[0]

    async def render_all(
        self, guild_id: int, texts: list[str], *, at: bool = True, also: Mapping[int, str] | None = None
    ) -> list[str]:
        """`render_mentions` of many texts with one lookup (a chat window mentions the bot in most lines);
        `also`: names known without asking (the bot's own, which is no member's)."""
        ids = {int(m) for text in texts for m in MENTION.findall(text)}
        if not ids:
            return texts
        known = {**await self.names(guild_id, ids - set(also or {})), **(also or {})}
        prefix = "@" if at else ""
        return [MENTION.sub(lambda m: prefix + known.get(int(m.group(1)), unnamed(m.group(1))), text) for text in texts]
