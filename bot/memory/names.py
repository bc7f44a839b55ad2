"""Display names: resolving a typed name to members, and rendering IDs as names for prompts and replies."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime

from cachetools import LRUCache, TTLCache
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.memory.caches import drop_entries
from bot.text import MENTION
from db import names as store
from db.names import fold

__all__ = ["MENTION", "NameDirectory"]
Known = tuple[str, str | None]  # display name, username
BOOK_SECONDS = 120  # names another process stored (an import, a second bot on PostgreSQL) show up within this
BOOKS = 256  # guilds whose names are held in memory at once


class _Book:
    """One guild's names as read from `member_names`, with what was noted since, and its lookup index."""

    def __init__(self, known: dict[int, Known]) -> None:
        self.known = known
        self._index: dict[str, list[int]] | None = None

    def set(self, user_id: int, name: Known) -> None:
        self.known[user_id] = name
        self._index = None

    def lookup(self, key: str) -> list[int]:
        if self._index is None:
            index: dict[str, set[int]] = {}
            for user_id, names in self.known.items():
                for name in names:
                    if name and (folded := fold(name)):
                        index.setdefault(folded, set()).add(user_id)
            self._index = {key: sorted(ids) for key, ids in index.items()}
        return self._index.get(key, [])


class NameDirectory:
    """Looks members up by name in `member_names` (kept current by ingestion).

    A guild's names are read once into memory (one statement, then none while replies resolve and render
    names) and kept BOOK_SECONDS; ingestion is write-behind, so names seen in the last moments may not be in
    SQL yet: `note` keeps them in a small LRU overlay too, which a book read later takes over. A purge or a
    forgotten member drops the guild's book (`drop`), here and, through the change feed, in other processes.
    """

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        recent: int = 10_000,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._recent: LRUCache[tuple[int, int], Known] = LRUCache(maxsize=recent)
        self._books: TTLCache[int, _Book] = TTLCache(maxsize=BOOKS, ttl=BOOK_SECONDS, timer=timer)
        self._generation: dict[int, int] = {}  # per guild: a book read while it moved is not kept

    def note(self, guild_id: int, user_id: int, display_name: str, username: str | None) -> None:
        """Remember the name a member was just seen with."""
        self._recent[(guild_id, user_id)] = (display_name, username)
        if (book := self._books.get(guild_id)) is not None:
            book.set(user_id, (display_name, username))

    async def store(
        self, guild_id: int, user_id: int, display_name: str, username: str | None, *, at: datetime
    ) -> None:
        """Write a name straight to `member_names` (name changes are rare; messages go through ingestion)."""
        async with self._sessions() as session, session.begin():
            await store.store(session, guild_id, user_id, display_name, username, at=at)

    def drop(self, guild_id: int, user_id: int | None = None) -> None:
        """Forget cached names of a member, or of a whole guild (after a purge)."""
        drop_entries(self._recent, guild_id, user_id)
        self._books.pop(guild_id, None)
        self._generation[guild_id] = self._generation.get(guild_id, 0) + 1

    async def _book(self, guild_id: int) -> _Book:
        if (book := self._books.get(guild_id)) is not None:
            return book
        generation = self._generation.get(guild_id, 0)
        async with self._sessions() as session:
            known = await store.all_names(session, guild_id)
        book = _Book(known)
        for (guild, user_id), name in list(self._recent.items()):
            if guild == guild_id:
                book.set(user_id, name)  # noted since (or not yet written): the newest name wins
        if self._generation.get(guild_id, 0) == generation:  # nothing was dropped while it was read
            self._books[guild_id] = book
        return book

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        """User IDs whose display name or username equals `name` (case-insensitive); several = ambiguous."""
        return (await self.resolve_all(guild_id, [name])).get(name, [])

    async def resolve_all(self, guild_id: int, names: list[str]) -> dict[str, list[int]]:
        """`resolve` of several names (the words of a question): name -> user IDs."""
        wanted = {name: fold(name.strip().lstrip("@")) for name in names}
        if not any(wanted.values()):
            return {}
        book = await self._book(guild_id)
        return {name: book.lookup(key) for name, key in wanted.items() if key}

    async def names(self, guild_id: int, user_ids: set[int]) -> dict[int, str]:
        """Display names for `user_ids`; unknown IDs are left out."""
        if not user_ids:
            return {}
        known = (await self._book(guild_id)).known
        return {u: known[u][0] for u in user_ids if u in known}

    async def name(self, guild_id: int, user_id: int) -> str:
        """One display name, or a neutral placeholder that never pings."""
        return (await self.names(guild_id, {user_id})).get(user_id, f"member {str(user_id)[-4:]}")

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
        return [
            MENTION.sub(lambda m: prefix + known.get(int(m.group(1)), f"member {m.group(1)[-4:]}"), text)
            for text in texts
        ]
