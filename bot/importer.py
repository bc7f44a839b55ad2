"""Import DiscordChatExporter JSON exports through the batched ingestion path; idempotent, validated first."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tqdm import tqdm

from bot.conversation import address, is_command
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage, Kind
from bot.speech import EXPORT_SPEECH, spoken
from db.records import MAX_ID

log = logging.getLogger(__name__)
# Where a whole file lands: an id no database can store (or no Discord id at all) refuses the file in one
# sentence, before anything is written. Ids inside messages are left to ingestion (a poison row is dead-lettered).
PlaceId = Annotated[int, Field(ge=0, le=MAX_ID)]  # 0: DiscordChatExporter's pseudo-guild of direct messages


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ExportAuthor(_Model):
    """An author as DiscordChatExporter writes it."""

    id: int
    name: str
    nickname: str | None = None
    is_bot: bool = Field(default=False, alias="isBot")


class ExportReference(_Model):
    """The message a reply (or a forward) points at."""

    message_id: int | None = Field(default=None, alias="messageId")
    type: str = "Default"  # "Forward" for forwarded messages


class ExportMention(_Model):
    """A mentioned user."""

    id: int


class ExportFile(_Model):
    """An attachment: its name is what memory keeps of it."""

    file_name: str = Field(default="", alias="fileName")


class ExportSticker(_Model):
    """A sticker: its name is what memory keeps of it."""

    name: str = ""


class ExportForward(_Model):
    """The message a forward carries."""

    content: str = ""
    attachments: list[ExportFile] = []
    stickers: list[ExportSticker] = []


class ExportMessage(_Model):
    """One exported message."""

    id: int
    type: str = "Default"
    timestamp: datetime
    timestamp_edited: datetime | None = Field(default=None, alias="timestampEdited")
    content: str = ""
    author: ExportAuthor
    mentions: list[ExportMention] = []
    reference: ExportReference | None = None
    attachments: list[ExportFile] = []
    stickers: list[ExportSticker] = []
    forwarded: ExportForward | None = Field(default=None, alias="forwardedMessage")

    def speech(self) -> str:
        """The words memory keeps (files, stickers and forwarded text included); "" for a system notice."""
        if self.type not in EXPORT_SPEECH:
            return ""
        forward = self.forwarded
        return spoken(
            self.content,
            files=[a.file_name for a in self.attachments],
            stickers=[s.name for s in self.stickers],
            forwarded=forward.content if forward is not None else None,
            forwarded_files=[a.file_name for a in forward.attachments] if forward is not None else (),
            forwarded_stickers=[s.name for s in forward.stickers] if forward is not None else (),
        )


class ExportGuild(_Model):
    """The guild an export comes from ("0" for direct messages)."""

    id: PlaceId
    name: str = ""


class ExportChannel(_Model):
    """The channel an export comes from; for a thread, `categoryId` is its parent channel."""

    id: Annotated[int, Field(gt=0, le=MAX_ID)]
    name: str = ""
    type: str = "GuildTextChat"
    category_id: PlaceId | None = Field(default=None, alias="categoryId")


class Export(_Model):
    """A whole DiscordChatExporter JSON file."""

    guild: ExportGuild
    channel: ExportChannel
    messages: list[ExportMessage]


class ImportFileError(Exception):
    """A file could not be imported; the message names the file and the problem."""


@dataclass(slots=True)
class ImportProgress:
    """How far an import of one file got: messages handled (queued for storage or skipped) of its total.

    Kept up to date while the import runs, so whoever stops it can say how far it got.
    """

    path: Path
    done: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What one file contributed."""

    path: Path
    guild: str
    channel: str
    messages: int
    skipped_bots: int
    skipped_notices: int = 0  # joins, pins, calls …: not speech
    guild_id: int = 0
    private: bool = False


def read_export(path: Path) -> Export:
    """Parse and validate a whole file before anything is stored, so a bad file stores nothing."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is fine
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFileError(f"{path}: is not a JSON export ({exc})") from exc
    try:
        return Export.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ImportFileError(f"{path}: is not a DiscordChatExporter JSON export: {where}: {first['msg']}") from exc


DIRECT = frozenset({"DirectTextChat", "DirectGroupTextChat"})
PRIVATE_THREAD = "GuildPrivateThread"
THREADS = frozenset({"GuildPublicThread", PRIVATE_THREAD, "GuildNewsThread"})


def _refuse_direct(path: Path, export: Export) -> None:
    if export.guild.id == 0 or export.channel.type in DIRECT:
        raise ImportFileError(
            f"{path}: is an export of direct messages; Elefant only keeps what is said in servers, so nothing "
            "was imported"
        )


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
    and `private` marks the exported channel as one @everyone cannot read (exports do not say). The import
    waits for storage when the queue is full (it must not outrun the database), and may be cancelled at any
    message: what was queued before is stored on close, and `tracking` says how far it got.
    """
    export = read_export(path)
    _refuse_direct(path, export)
    tracking = tracking or ImportProgress(path)
    tracking.total = len(export.messages)
    log.info("importing %s: %d messages", path.name, tracking.total)
    guild_id, channel = export.guild.id, export.channel
    thread = channel.type in THREADS
    is_private = private or channel.type == PRIVATE_THREAD
    await memory.observe_channel(
        guild_id,
        channel.id,
        # A file cannot say that a channel is public: without --private, what is known already stays.
        is_private=True if is_private else None,
        parent_id=channel.category_id if thread else None,
        channel_type=channel.type,
    )
    skipped = notices = 0
    with tqdm(export.messages, desc=path.name, unit="msg", disable=not progress, leave=False) as bar:
        for index, m in enumerate(bar):
            tracking.done = index  # every earlier message is queued or skipped; a cancel lands on this one's awaits
            if index % 1000 == 0:
                await asyncio.sleep(0)  # a long file must not hold the loop: the writer and a stop get their turn
            if m.author.is_bot and not include_bots:
                skipped += 1
                continue
            text = m.speech()
            if not text:
                notices += 1
                continue
            addressed = address(m.content, bot_user_id=0, bot_name=bot_name, replied_to_bot=False)
            await memory.ingest_message(
                IncomingMessage(
                    guild_id=guild_id,
                    channel_id=channel.id,
                    message_id=m.id,
                    author_id=m.author.id,
                    author_name=m.author.nickname or m.author.name,
                    author_username=m.author.name,
                    content=text,
                    created_at=m.timestamp,
                    edited_at=m.timestamp_edited,
                    reply_to_id=m.reference.message_id if m.reference and m.reference.type != "Forward" else None,
                    mentioned_user_ids=tuple(x.id for x in m.mentions),
                    kind=Kind.COMMAND if addressed is not None and is_command(addressed) else Kind.SPEECH,
                ),
                wait=True,  # an import must not outrun storage: it waits for room instead of spilling to disk
            )
    tracking.done = tracking.total
    await memory.optimize()  # stored, and the query planner knows the guild's new size
    stored = len(export.messages) - skipped - notices
    return ImportResult(path, export.guild.name, channel.name, stored, skipped, notices, guild_id, is_private)
