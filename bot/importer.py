"""Import DiscordChatExporter JSON exports through the batched ingestion path; idempotent, validated first."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tqdm import tqdm

from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage

log = logging.getLogger(__name__)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ExportAuthor(_Model):
    """An author as DiscordChatExporter writes it."""

    id: int
    name: str
    nickname: str | None = None
    is_bot: bool = Field(default=False, alias="isBot")


class ExportReference(_Model):
    """The message a reply points at."""

    message_id: int | None = Field(default=None, alias="messageId")


class ExportMention(_Model):
    """A mentioned user."""

    id: int


class ExportMessage(_Model):
    """One exported message."""

    id: int
    timestamp: datetime
    timestamp_edited: datetime | None = Field(default=None, alias="timestampEdited")
    content: str = ""
    author: ExportAuthor
    mentions: list[ExportMention] = []
    reference: ExportReference | None = None


class ExportGuild(_Model):
    """The guild an export comes from."""

    id: int
    name: str = ""


class ExportChannel(_Model):
    """The channel an export comes from."""

    id: int
    name: str = ""


class Export(_Model):
    """A whole DiscordChatExporter JSON file."""

    guild: ExportGuild
    channel: ExportChannel
    messages: list[ExportMessage]


class ImportFileError(Exception):
    """A file could not be imported; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What one file contributed."""

    path: Path
    guild: str
    channel: str
    messages: int
    skipped_bots: int


def read_export(path: Path) -> Export:
    """Parse and validate a whole file before anything is stored, so a bad file stores nothing."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
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


async def import_file(memory: MemoryManager, path: Path, *, include_bots: bool, progress: bool) -> ImportResult:
    """Store every message of one export (a second import of the same file adds nothing)."""
    export = read_export(path)
    skipped = 0
    guild_id, channel_id = export.guild.id, export.channel.id
    for m in tqdm(export.messages, desc=path.name, unit="msg", disable=not progress, leave=False):
        if m.author.is_bot and not include_bots:
            skipped += 1
            continue
        await memory.ingest_message(
            IncomingMessage(
                guild_id=guild_id,
                channel_id=channel_id,
                message_id=m.id,
                author_id=m.author.id,
                author_name=m.author.nickname or m.author.name,
                author_username=m.author.name,
                content=m.content,
                created_at=m.timestamp,
                edited_at=m.timestamp_edited,
                reply_to_id=m.reference.message_id if m.reference else None,
                mentioned_user_ids=tuple(x.id for x in m.mentions),
            )
        )
    await memory.flush()
    return ImportResult(path, export.guild.name, export.channel.name, len(export.messages) - skipped, skipped)
