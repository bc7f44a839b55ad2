"""Import DiscordChatExporter JSON exports through the batched ingestion path: streamed, validated whole first.

A file is read twice and never held: the first pass (bot/exports.py) validates every message and stages the
rows ingestion needs in a temporary file, the second feeds them to storage. Memory stays the same whatever
the export's size, and a file that turns out bad at its end still stores nothing. Idempotent.
"""

from __future__ import annotations

import asyncio
import logging
import marshal
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from cachetools import LRUCache
from tqdm import tqdm

from bot.exports import (
    DirectMessagesError,
    ExportAuthor,
    ExportHead,
    ExportMention,
    ExportMessage,
    iter_messages,
    open_export,
    read_head,
)
from bot.invocation import command_name
from bot.memory.manager import MemoryManager
from bot.memory.names import unnamed
from bot.memory.types import IncomingMessage, Kind
from bot.reply.routing import address, stored_kind

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ImportProgress:
    """How far an import of one file got: messages handled (queued for storage or skipped) of its total.

    Kept up to date while the import runs, so whoever stops it can say how far it got; the total is known once
    the file has been read and validated.
    """

    path: Path
    done: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What one file contributed: its messages of people, and what storage made of them."""

    path: Path
    guild: str
    channel: str
    messages: int  # handed to storage: stored + duplicates + dead_letters
    skipped_bots: int
    skipped_notices: int = 0  # joins, pins, calls …: not speech
    guild_id: int = 0
    private: bool = False
    stored: int = 0  # new rows: not in the database before
    duplicates: int = 0  # stored already (an earlier import, the live bot); a newer edit still updates them
    dead_letters: int = 0  # refused by every database (an impossible id), kept in dead_letters
    opted_out: int = 0  # by members who opted out here (or were when they said it, or were forgotten): not kept
    expired: int = 0  # older than retention (RETENTION_DAYS) keeps: not kept

    @property
    def skipped(self) -> int:
        """Messages not handed to storage."""
        return self.skipped_bots + self.skipped_notices + self.opted_out + self.expired


DIRECT = frozenset({"DirectTextChat", "DirectGroupTextChat"})
PRIVATE_THREAD = "GuildPrivateThread"
THREADS = frozenset({"GuildPublicThread", PRIVATE_THREAD, "GuildNewsThread"})


def _refuse_direct(path: Path, head: ExportHead) -> None:
    if head.guild.id == 0 or head.channel.type in DIRECT:
        raise DirectMessagesError(
            f"{path}: is an export of direct messages (Elefant keeps only what is said in servers)"
        )


STAGED_ROWS = 1000  # rows per staged record: one marshal.load each when storing


@dataclass(slots=True)
class _Staged:
    """A validated file's messages of people, as the rows ingestion needs, in a temporary file."""

    rows: IO[bytes]
    total: int = 0
    skipped_bots: int = 0
    notices: int = 0


REMEMBERED_REPLIES = 10_000  # the bot's latest messages a reply may point at: memory stays bounded


class _TheBot:
    """Who Elefant is in an export, learnt as the file is read: an export names no application, so the bot is a
    bot account called by its name (as an author, or mentioned), and its messages are what a reply to the bot
    points at."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.ids: set[int] = set()
        self._said: LRUCache[int, bool] = LRUCache(REMEMBERED_REPLIES)

    def note(self, m: ExportMessage) -> None:
        """Learn the bot's id from a message's author and mentions, and remember what the bot said."""
        users: list[ExportAuthor | ExportMention] = [m.author, *m.mentions]
        self.ids.update(user.id for user in users if self._is_it(user))
        if m.author.id in self.ids:
            self._said[m.id] = True

    def wrote(self, m: ExportMessage) -> bool:
        """The bot's own message: derived data, which the bot stores itself, with its sources, or not at all."""
        return m.author.id in self.ids

    def addressed(self, m: ExportMessage) -> str | None:
        """What the message says to the bot, as the listener reads it (None: not addressed to the bot)."""
        reference = m.reference
        replied = reference is not None and reference.type != "Forward" and reference.message_id in self._said
        for bot_id in sorted(self.ids) or [0]:
            found = address(m.content, bot_user_id=bot_id, bot_name=self._name, replied_to_bot=replied)
            if found is not None:
                return found
        return None

    def _is_it(self, user: ExportAuthor | ExportMention) -> bool:
        names = {user.name.casefold(), (user.nickname or "").casefold()}
        return user.is_bot and self._name.casefold() in names


def _row(index: int, m: ExportMessage, text: str, bot: _TheBot) -> tuple[Any, ...]:
    # Plain values only (marshal): times as ISO text keep their offset, and an impossible one stays for
    # ingestion to refuse (a dead letter), as before.
    # A deleted account's placeholder name would make it a member called "Deleted User" (every deleted account
    # alike): it is called what any member without a known name is.
    author = m.author
    name, username = (unnamed(author.id), None) if author.deleted else (author.nickname or author.name, author.name)
    return (
        index,
        m.id,
        author.id,
        name,
        username,
        text,
        m.timestamp.isoformat(),
        None if m.timestamp_edited is None else m.timestamp_edited.isoformat(),
        m.reference.message_id if m.reference and m.reference.type != "Forward" else None,
        tuple(x.id for x in m.mentions),
        int(stored_kind(bot.addressed(m))),
    )


async def _stage(path: Path, *, include_bots: bool, bot_name: str, progress: bool) -> _Staged:
    """Read and validate every message, keeping the rows to store on disk; nothing is stored yet."""
    staged = _Staged(tempfile.TemporaryFile(prefix="elefant-import-"))  # noqa: SIM115 - closed by import_file
    bot = _TheBot(bot_name)
    chunk: list[tuple[Any, ...]] = []
    try:
        with (
            open_export(path) as source,
            tqdm(
                total=os.fstat(source.fileno()).st_size,
                desc=f"{path.name} (reading)",
                unit="B",
                unit_scale=True,
                disable=not progress,
            ) as bar,
        ):
            for index, m in enumerate(iter_messages(path, source)):
                staged.total = index + 1
                bot.note(m)
                if m.author.is_bot and (not include_bots or bot.wrote(m)):
                    staged.skipped_bots += 1
                elif text := m.speech():
                    chunk.append(_row(index, m, text, bot))
                else:
                    staged.notices += 1
                if len(chunk) == STAGED_ROWS:
                    marshal.dump(chunk, staged.rows)
                    chunk = []
                if index % STAGED_ROWS == 0:
                    bar.update(source.tell() - bar.n)
                    await asyncio.sleep(0)  # a long file must not hold the loop: a stop gets its turn
        if chunk:
            marshal.dump(chunk, staged.rows)
        staged.rows.seek(0)
    except BaseException:
        staged.rows.close()
        raise
    return staged


def _staged_rows(rows: IO[bytes]) -> Iterator[list[tuple[Any, ...]]]:
    while True:
        try:
            yield marshal.load(rows)  # noqa: S302 - our own temporary file, written just before
        except EOFError:
            return


async def import_file(
    memory: MemoryManager,
    path: Path,
    *,
    include_bots: bool,
    progress: bool,
    bot_name: str = "Elefant",
    private: bool = False,
    tracking: ImportProgress | None = None,
) -> ImportResult:
    """Store every message people wrote in one export (a second import of the same file adds nothing).

    A private thread stays private (only visible inside itself), a thread inherits its parent channel's scope,
    and `private` marks the exported channel as one @everyone cannot read (exports do not say). The whole file
    is validated before anything is stored. The import waits for storage when the queue is full (it must not
    outrun the database), and may be cancelled at any message: what was queued before is stored on close,
    and `tracking` says how far it got.
    """
    head = read_head(path)
    _refuse_direct(path, head)
    tracking = tracking or ImportProgress(path)
    staged = await _stage(path, include_bots=include_bots, bot_name=bot_name, progress=progress)
    with staged.rows:
        tracking.total = staged.total
        is_private = await _observe_channel(memory, head, private)
        await memory.flush()  # what was pending before (an earlier stop's spill) is not this file's to count
        before = memory.intake.stored_so_far()
        log.info("importing %s: %d messages", path.name, tracking.total)
        handed, opted_out, expired = await _store(memory, head, staged, tracking, progress=progress)
        await memory.admin.optimize()  # stored (flushed), and the query planner knows the guild's new size
        await memory.intake.names_stored(head.guild.id)  # a running bot reads the guild's names again
    counts = memory.intake.stored_so_far() - before
    return ImportResult(
        path,
        head.guild.name,
        head.channel.name,
        handed,
        staged.skipped_bots,
        staged.notices,
        head.guild.id,
        is_private,
        stored=counts.new,
        duplicates=counts.known,
        dead_letters=counts.dead_letters,
        opted_out=opted_out,
        expired=expired,
    )


async def _observe_channel(memory: MemoryManager, head: ExportHead, private: bool) -> bool:
    """Tell memory where the export was said (a thread's parent included); whether it is private."""
    channel = head.channel
    is_private = private or channel.type == PRIVATE_THREAD
    await memory.intake.channel(
        head.guild.id,
        channel.id,
        # A file cannot say that a channel is public: without --private, what is known already stays.
        is_private=True if is_private else None,
        parent_id=channel.category_id if channel.type in THREADS else None,
        channel_type=channel.type,
    )
    return is_private


async def _store(
    memory: MemoryManager, head: ExportHead, staged: _Staged, tracking: ImportProgress, *, progress: bool
) -> tuple[int, int, int]:
    """Hand the staged rows to storage in order; how many were queued, by members opted out, and too old to keep."""
    handed = opted_out = expired = 0
    with tqdm(total=staged.total, desc=tracking.path.name, unit="msg", disable=not progress, leave=False) as bar:
        for chunk in _staged_rows(staged.rows):
            for row in chunk:
                tracking.done = row[0]  # every earlier message is queued or skipped; a cancel lands on this one
                said = _incoming(head, row)
                if memory.intake.expired(said.created_at):
                    expired += 1
                    continue
                queued = await memory.intake.message(
                    said,
                    wait=True,  # an import must not outrun storage: it waits for room instead of spilling
                    embed_now=False,  # the embedding backlog finds them in the database
                )
                handed += queued
                opted_out += not queued
            tracking.done = chunk[-1][0] + 1  # the whole chunk is queued
            bar.update(tracking.done - bar.n)
            await asyncio.sleep(0)  # the writer and a stop get their turn
    tracking.done = tracking.total
    return handed, opted_out, expired


def _incoming(head: ExportHead, row: tuple[Any, ...]) -> IncomingMessage:
    """A staged row (`_row`) as the message ingestion takes."""
    _, message_id, author_id, name, username, text, at, edited, reply, mentions, kind = row
    return IncomingMessage(
        guild_id=head.guild.id,
        channel_id=head.channel.id,
        message_id=message_id,
        author_id=author_id,
        author_name=name,
        author_username=username,
        content=text,
        created_at=datetime.fromisoformat(at),
        edited_at=None if edited is None else datetime.fromisoformat(edited),
        reply_to_id=reply,
        mentioned_user_ids=mentions,
        kind=Kind(kind),
    )


def _n(count: int, thing: str, things: str | None = None) -> str:
    return f"{count:,} {thing if count == 1 else things or thing + 's'}"


def describe(result: ImportResult) -> str:
    """One line for a file: where it went and what storage made of its messages."""
    why = ", ".join(
        said
        for n, said in (
            (result.skipped_bots, f"{result.skipped_bots:,} from bots"),
            (result.skipped_notices, _n(result.skipped_notices, "system notice")),
            (result.opted_out, f"{result.opted_out:,} by members opted out or forgotten"),
            (result.expired, f"{result.expired:,} older than RETENTION_DAYS keeps"),
        )
        if n
    )
    line = (
        f"{result.path}: #{result.channel} ({result.guild}): {result.stored:,} stored, "
        f"{_n(result.duplicates, 'duplicate')}, {result.skipped:,} skipped{f' ({why})' if why else ''}"
    )
    if result.dead_letters:
        line += f", {result.dead_letters:,} refused (kept as dead letters)"
    return line


@dataclass
class ImportSummary:
    """What an import command stored, per guild, and what to run next."""

    guilds: dict[int, list[ImportResult]] = field(default_factory=dict)

    def add(self, result: ImportResult) -> None:
        """Count one imported file."""
        self.guilds.setdefault(result.guild_id, []).append(result)

    def lines(self) -> list[str]:
        """A line per guild stored into, then the command that shows it (spelled as this process was started)."""
        said = []
        for guild_id, results in self.guilds.items():
            stored, duplicates = sum(r.stored for r in results), sum(r.duplicates for r in results)
            skipped, dead = sum(r.skipped for r in results), sum(r.dead_letters for r in results)
            refused = f", {dead:,} refused (dead letters)" if dead else ""
            said.append(
                f"Guild {guild_id} ({results[0].guild}): {_n(stored, 'message')} stored, "
                f"{_n(duplicates, 'duplicate')}, {skipped:,} skipped{refused}, from {_n(len(results), 'file')}."
            )
        said += [f"Next: {command_name()} stats --guild {guild_id}" for guild_id in self.guilds]
        return said
