"""DiscordChatExporter JSON exports: their shape (pydantic models) and reading them as a stream.

The whole file is never in memory: an incremental parser (ijson's C backend) reads the preamble (guild,
channel) and then one message at a time, each validated as it comes. Every problem is one sentence that
names the file, and for a message its index and field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated, Any

import ijson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.speech import EXPORT_SPEECH, spoken
from db.records import MAX_ID

# Where a whole file lands: an id no database can store (or no Discord id at all) refuses the file in one
# sentence, before anything is written. Ids inside messages are left to ingestion (a poison row is dead-lettered).
PlaceId = Annotated[int, Field(ge=0, le=MAX_ID)]  # 0: DiscordChatExporter's pseudo-guild of direct messages


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# Discord renames a deleted account "Deleted User" (with hex digits, lately), discriminator 0000: a name no
# account can choose (new usernames are lower case, without spaces; no old one had the discriminator 0000).
DELETED_ACCOUNT = re.compile(r"Deleted User(?: [0-9a-f]{6,})?")


class ExportAuthor(_Model):
    """An author as DiscordChatExporter writes it."""

    id: int
    name: str
    discriminator: str = ""
    nickname: str | None = None
    is_bot: bool = Field(default=False, alias="isBot")

    @property
    def deleted(self) -> bool:
        """The account was deleted: its name is Discord's placeholder, not the person's."""
        return self.discriminator in {"", "0000"} and DELETED_ACCOUNT.fullmatch(self.name) is not None


class ExportReference(_Model):
    """The message a reply (or a forward) points at."""

    message_id: int | None = Field(default=None, alias="messageId")
    type: str = "Default"  # "Forward" for forwarded messages


class ExportMention(_Model):
    """A mentioned user."""

    id: int
    name: str = ""
    nickname: str | None = None
    is_bot: bool = Field(default=False, alias="isBot")


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
    """A whole DiscordChatExporter JSON file, in memory (`read_export`: tests and small tools; imports stream)."""

    guild: ExportGuild
    channel: ExportChannel
    messages: list[ExportMessage]


@dataclass(frozen=True, slots=True)
class ExportHead:
    """Where an export's messages were said (DiscordChatExporter writes it before the messages)."""

    guild: ExportGuild
    channel: ExportChannel


class ImportFileError(Exception):
    """A file could not be imported; the message names the file and the problem."""


class DirectMessagesError(ImportFileError):
    """A file is an export of direct messages, which Elefant does not keep: skipped, not a failure."""


def open_export(path: Path) -> IO[bytes]:
    """The file, opened for the parser (past a UTF-8 BOM); ImportFileError when it cannot be read."""
    try:
        file = path.open("rb")
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if file.read(3) != b"\xef\xbb\xbf":  # a BOM (as Windows tools save "UTF-8") is fine
        file.seek(0)
    return file


def _natural(path: Path) -> list[Any]:
    # "part 2" before "part 10"; a partitioned export's first file ("name.json") before "name [part 2].json"
    return [int(t) if t.isdigit() else t.casefold() for t in re.split(r"(\d+)", str(path.with_suffix("")))]


def export_files(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """The files to import: each file as given, each folder's *.json files (recursively) in a stable order.

    Also the sentences for what cannot be imported at all: a folder that holds none, a file that cannot be
    opened (said here, before any database is opened). A file named twice is imported once.
    """
    files: list[Path] = []
    refused: list[str] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if p.suffix.lower() == ".json" and p.is_file()),
                key=lambda p: _natural(p.relative_to(path)),
            )
            if not found:
                refused.append(f"{path}: is a folder with no .json exports in it")
            files.extend(found)
        else:
            try:
                open_export(path).close()
            except ImportFileError as exc:
                refused.append(str(exc))
                continue
            files.append(path)
    seen: set[Path] = set()
    unique = []
    for path in files:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique, refused


def _not_json(path: Path, exc: Exception) -> ImportFileError:
    reason = exc.args[0] if exc.args else exc
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    first = str(reason).strip().splitlines()[0].rstrip(".") if str(reason).strip() else type(exc).__name__
    return ImportFileError(f"{path}: is not a JSON export ({first})")


def _not_export(path: Path, where: str, problem: str) -> ImportFileError:
    return ImportFileError(f"{path}: is not a DiscordChatExporter JSON export: {where}: {problem}")


def _invalid(path: Path, exc: ValidationError, where: str) -> ImportFileError:
    first = exc.errors()[0]
    return _not_export(path, ".".join([where, *(str(part) for part in first["loc"])]), first["msg"])


_PREAMBLE = ("guild", "channel")


def _preamble(path: Path) -> tuple[dict[str, Any], str | None]:
    """The top-level guild and channel, and the first event of `messages` (None: there is none).

    DiscordChatExporter writes both before the messages, so this reads a few hundred bytes; a file ordered
    otherwise is read to its end (event by event, slowly, but right).
    """
    found: dict[str, Any] = {}
    messages: str | None = None
    building: ijson.ObjectBuilder | None = None
    key = ""
    with open_export(path) as file:
        try:
            for prefix, event, value in ijson.parse(file):
                if building is not None:
                    building.event(event, value)
                    if prefix == key and event in ("end_map", "end_array"):
                        found[key], building = building.value, None
                elif prefix in _PREAMBLE and event != "map_key" and prefix not in found:
                    if event in ("start_map", "start_array"):
                        building, key = ijson.ObjectBuilder(), prefix
                        building.event(event, value)
                    else:
                        found[prefix] = value
                elif prefix == "messages" and messages is None and event != "map_key":
                    messages = event
                    if len(found) == len(_PREAMBLE):
                        break
        except ijson.JSONError as exc:
            raise _not_json(path, exc) from exc
    return found, messages


def read_head(path: Path) -> ExportHead:
    """Where the export's messages were said, validated; ImportFileError for anything else."""
    found, messages = _preamble(path)
    parts: dict[str, ExportGuild | ExportChannel] = {}
    for name, model in (("guild", ExportGuild), ("channel", ExportChannel)):
        try:
            parts[name] = model.model_validate(found.get(name))
        except ValidationError as exc:
            if name not in found:
                raise _not_export(path, name, "Field required") from None
            raise _invalid(path, exc, name) from None
    if messages is None:
        raise _not_export(path, "messages", "Field required")
    if messages != "start_array":
        raise _not_export(path, "messages", "Input should be a valid list")
    guild, channel = parts["guild"], parts["channel"]
    assert isinstance(guild, ExportGuild) and isinstance(channel, ExportChannel)
    return ExportHead(guild, channel)


def iter_messages(path: Path, file: IO[bytes]) -> Iterator[ExportMessage]:
    """Every message of the export `file` (from `open_export(path)`), validated one at a time as it is read."""
    parsed = ijson.items(file, "messages.item", use_float=True)
    index = 0
    while True:
        try:
            raw = next(parsed)
        except StopIteration:
            return
        except ijson.JSONError as exc:
            raise _not_json(path, exc) from exc
        except OSError as exc:
            raise ImportFileError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
        try:
            yield ExportMessage.model_validate(raw)
        except ValidationError as exc:
            raise _invalid(path, exc, f"messages.{index}") from None
        index += 1


def read_export(path: Path) -> Export:
    """A whole export in memory, validated (tests and small tools; `import_file` streams)."""
    head = read_head(path)
    with open_export(path) as file:
        return Export(guild=head.guild, channel=head.channel, messages=list(iter_messages(path, file)))
