"""DiscordChatExporter JSON exports, written field by field the way its `JsonMessageWriter` writes them.

Source read: Tyrrrz/DiscordChatExporter, DiscordChatExporter.Core/Exporting/JsonMessageWriter.cs (with
MessageExporter.cs for partitions, PlainTextMessageExtensions.GetFallbackContent for system notices, and the
ChannelKind / MessageKind / MessageReferenceKind enums). What it does, and what this module reproduces:

- The preamble: `guild{id,name,iconUrl}`, `channel{id,type,categoryId,category,name,topic}` where
  `categoryId`/`category` are the channel's *parent* (a category for a channel, the parent channel for a
  thread, nothing for a DM), `dateRange{after,before}`, `exportedAt`; then `messages` and `messageCount`.
- Every id is a string; `type` is the C# enum name (`Default`, `Reply`, `GuildMemberJoin`, …) or, for a
  Discord message type the enum does not name, the bare number (`"8"` for a boost, `"20"` for a slash-command
  reply, `"21"` for a thread starter). Channel types likewise (`GuildPrivateThread`, `DirectTextChat`, …).
- Dates go through `NormalizeDate`: the exporting machine's local offset unless `--utc`, written as .NET
  writes a DateTimeOffset (`2025-03-01T23:30:00.123+05:30`, fraction only when there is one).
- A system notification (types 1 to 18) has its *fallback* text as content ("Joined the server.", "Started a
  call that lasted 113 minutes." …); for boosts (8–11) the fallback is the raw content, e.g. "3".
- Messages: id, type, timestamp, timestampEdited, callEndedTimestamp, isPinned, content, author{id,name,
  discriminator,nickname,color,isBot,roles,avatarUrl}, attachments[{id,url,fileName,fileSizeBytes}], embeds,
  stickers[{id,name,format,sourceUrl}], reactions, mentions (full users), then only when present
  reference{type,messageId,channelId,guildId}, forwardedMessage{timestamp,timestampEdited,content,
  attachments,embeds,stickers}, interaction{id,name,user}; and inlineEmojis.
- `--partition N` writes "name.json", "name [part 2].json", … each with the whole preamble and its own count.

Tests describe what happened in Discord (a `Msg` with the API's numeric type and raw content) and let the
writer below turn it into the file, so an export here is what the real tool would produce from that history.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path

# DiscordChatExporter.Core/Discord/Data/MessageKind.cs: the kinds it names; the rest print as numbers.
MESSAGE_KINDS = {
    0: "Default",
    1: "RecipientAdd",
    2: "RecipientRemove",
    3: "Call",
    4: "ChannelNameChange",
    5: "ChannelIconChange",
    6: "ChannelPinnedMessage",
    7: "GuildMemberJoin",
    18: "ThreadCreated",
    19: "Reply",
}
# Discord API message types used below.
DEFAULT, RECIPIENT_ADD, RECIPIENT_REMOVE, CALL, NAME_CHANGE, ICON_CHANGE, PIN, JOIN = 0, 1, 2, 3, 4, 5, 6, 7
BOOST, BOOST_TIER_1, THREAD_CREATED, REPLY, SLASH_REPLY, THREAD_STARTER = 8, 9, 18, 19, 20, 21
# DiscordChatExporter.Core/Discord/Data/ChannelKind.cs
TEXT, DM, GROUP_DM, CATEGORY, NEWS, PUBLIC_THREAD, PRIVATE_THREAD = 0, 1, 3, 4, 5, 11, 12
CHANNEL_KINDS = {
    0: "GuildTextChat",
    1: "DirectTextChat",
    2: "GuildVoiceChat",
    3: "DirectGroupTextChat",
    4: "GuildCategory",
    5: "GuildNews",
    10: "GuildNewsThread",
    11: "GuildPublicThread",
    12: "GuildPrivateThread",
    13: "GuildStageVoice",
    14: "GuildDirectory",
    15: "GuildForum",
}
DIRECT_MESSAGES = 0  # Guild.DirectMessages: the pseudo-guild of DM exports


def kind_name(kinds: dict[int, str], value: int) -> str:
    """C#'s Enum.ToString(): the member's name, or the bare number for a value the enum does not name."""
    return kinds.get(value, str(value))


@dataclass(frozen=True)
class User:
    """A Discord user as the exporter sees it (`nickname` is the member's display name in the guild)."""

    id: int
    name: str
    nickname: str | None = None
    is_bot: bool = False
    discriminator: int | None = None

    @property
    def display_name(self) -> str:
        return self.nickname or self.name


@dataclass(frozen=True)
class Guild:
    id: int
    name: str


@dataclass(frozen=True)
class Channel:
    id: int
    kind: int
    name: str
    parent: Channel | None = None  # a category, or a thread's parent channel
    topic: str | None = None


@dataclass(frozen=True)
class File:
    id: int
    name: str
    size: int = 48_213


@dataclass(frozen=True)
class Sticker:
    id: int
    name: str
    format: str = "Png"  # StickerFormat: Png, Apng, Lottie, Gif


@dataclass(frozen=True)
class Reference:
    message_id: int | None
    channel_id: int | None
    guild_id: int | None
    forward: bool = False  # MessageReferenceKind.Forward


@dataclass(frozen=True)
class Snapshot:
    """What a forwarded message carries (Discord's message_snapshots[0].message)."""

    at: datetime
    content: str = ""
    files: Sequence[File] = ()
    stickers: Sequence[Sticker] = ()


@dataclass(frozen=True)
class Interaction:
    id: int
    name: str
    user: User


@dataclass(frozen=True)
class Msg:
    """A message as Discord's API has it: numeric type, raw content (system kinds: usually empty)."""

    id: int
    author: User
    at: datetime
    content: str = ""
    type: int = DEFAULT
    edited: datetime | None = None
    call_ended: datetime | None = None
    pinned: bool = False
    files: Sequence[File] = ()
    stickers: Sequence[Sticker] = ()
    mentions: Sequence[User] = ()
    reference: Reference | None = None
    forwarded: Snapshot | None = None
    interaction: Interaction | None = None
    reactions: Sequence[tuple[str, int]] = ()  # (emoji, count)

    @property
    def is_system_notification(self) -> bool:
        return 1 <= self.type <= 18  # Message.IsSystemNotification: RecipientAdd .. ThreadCreated


@dataclass
class JsonWriter:
    """JsonMessageWriter for one channel: `NormalizeDate` uses `zone` (the exporter machine's) unless `utc`."""

    guild: Guild
    channel: Channel
    zone: tzinfo = UTC
    utc: bool = False
    after: datetime | None = None
    before: datetime | None = None
    exported_at: datetime = field(default_factory=lambda: datetime(2026, 11, 23, 9, 30, 12, 345_678, tzinfo=UTC))

    def date(self, instant: datetime | None) -> str | None:
        """A DateTimeOffset as System.Text.Json writes it, after ToLocalTime() (or ToUniversalTime())."""
        if instant is None:
            return None
        local = instant.astimezone(UTC if self.utc else self.zone)
        text = f"{local.year:04d}-" + local.strftime("%m-%dT%H:%M:%S")  # .NET pads year 1 ("0001"), strftime not
        fraction = f"{local.microsecond:06d}0".rstrip("0")  # 7 digits of ticks, trailing zeros dropped
        offset = local.strftime("%z")
        return f"{text}{'.' + fraction if fraction else ''}{offset[:3]}:{offset[3:]}"

    def user(self, user: User, *, roles: bool = True) -> dict[str, object]:
        written: dict[str, object] = {
            "id": str(user.id),
            "name": user.name,
            "discriminator": f"{user.discriminator:04d}" if user.discriminator is not None else "0000",
            "nickname": user.display_name,
            "color": None,
            "isBot": user.is_bot,
        }
        if roles:
            written["roles"] = []
        written["avatarUrl"] = f"https://cdn.discordapp.com/embed/avatars/{user.id % 5}.png"
        return written

    def file(self, file: File) -> dict[str, object]:
        return {
            "id": str(file.id),
            "url": f"https://cdn.discordapp.com/attachments/{self.channel.id}/{file.id}/{file.name}",
            "fileName": file.name,
            "fileSizeBytes": file.size,
        }

    def sticker(self, sticker: Sticker) -> dict[str, object]:
        ext = {"Lottie": "json", "Gif": "gif"}.get(sticker.format, "png")
        return {
            "id": str(sticker.id),
            "name": sticker.name,
            "format": sticker.format,
            "sourceUrl": f"https://media.discordapp.net/stickers/{sticker.id}.{ext}",
        }

    def fallback_content(self, m: Msg) -> str:
        """PlainTextMessageExtensions.GetFallbackContent, for system notifications."""
        first = m.mentions[0] if m.mentions else None
        if m.type == RECIPIENT_ADD:
            return f"Added {first.display_name} to the group." if first else "Added a recipient."
        if m.type == RECIPIENT_REMOVE:
            if first is None:
                return "Removed a recipient."
            return "Left the group." if first.id == m.author.id else f"Removed {first.display_name} from the group."
        if m.type == CALL:
            minutes = (m.call_ended - m.at).total_seconds() / 60 if m.call_ended else 0
            return f"Started a call that lasted {minutes:,.0f} minutes."
        if m.type == NAME_CHANGE:
            return f"Changed the channel name: {m.content}" if m.content.strip() else "Changed the channel name."
        return {
            ICON_CHANGE: "Changed the channel icon.",
            PIN: "Pinned a message.",
            THREAD_CREATED: "Started a thread.",
            JOIN: "Joined the server.",
        }.get(m.type, m.content)

    def message(self, m: Msg) -> dict[str, object]:
        written: dict[str, object] = {
            "id": str(m.id),
            "type": kind_name(MESSAGE_KINDS, m.type),
            "timestamp": self.date(m.at),
            "timestampEdited": self.date(m.edited),
            "callEndedTimestamp": self.date(m.call_ended),
            "isPinned": m.pinned,
            "content": self.fallback_content(m) if m.is_system_notification else m.content,
            "author": self.user(m.author),
            "attachments": [self.file(f) for f in m.files],
            "embeds": [],
            "stickers": [self.sticker(s) for s in m.stickers],
            "reactions": [
                {
                    "emoji": {"id": "", "name": emoji, "code": emoji, "isAnimated": False, "imageUrl": ""},
                    "count": count,
                    "users": [],
                }
                for emoji, count in m.reactions
            ],
            "mentions": [self.user(u) for u in m.mentions],
        }
        if m.reference is not None:
            ref = m.reference
            written["reference"] = {
                "type": "Forward" if ref.forward else "Default",
                "messageId": _str(ref.message_id),
                "channelId": _str(ref.channel_id),
                "guildId": _str(ref.guild_id),
            }
        if m.forwarded is not None:
            fwd = m.forwarded
            written["forwardedMessage"] = {
                "timestamp": self.date(fwd.at),
                "timestampEdited": None,
                "content": fwd.content,
                "attachments": [self.file(f) for f in fwd.files],
                "embeds": [],
                "stickers": [self.sticker(s) for s in fwd.stickers],
            }
        if m.interaction is not None:
            written["interaction"] = {
                "id": str(m.interaction.id),
                "name": m.interaction.name,
                "user": self.user(m.interaction.user),
            }
        written["inlineEmojis"] = []
        return written

    def document(self, messages: Sequence[Msg]) -> dict[str, object]:
        """One whole file: preamble, messages, postamble."""
        parent = self.channel.parent
        return {
            "guild": {
                "id": str(self.guild.id),
                "name": self.guild.name,
                "iconUrl": "https://cdn.discordapp.com/embed/avatars/0.png",
            },
            "channel": {
                "id": str(self.channel.id),
                "type": kind_name(CHANNEL_KINDS, self.channel.kind),
                "categoryId": str(parent.id) if parent else None,
                "category": parent.name if parent else None,
                "name": self.channel.name,
                "topic": self.channel.topic,
            },
            "dateRange": {"after": self.date(self.after), "before": self.date(self.before)},
            "exportedAt": self.date(self.exported_at),
            "messages": [self.message(m) for m in messages],
            "messageCount": len(messages),
        }

    def write(self, path: Path, messages: Sequence[Msg], *, partition: int | None = None) -> list[Path]:
        """The file(s) `--output path [--partition N]` produces: UTF-8, indented, non-ASCII unescaped."""
        size = partition or max(len(messages), 1)
        chunks = [messages[i : i + size] for i in range(0, len(messages), size)] or [[]]
        paths = []
        for index, chunk in enumerate(chunks):
            target = path if index == 0 else path.with_name(f"{path.stem} [part {index + 1}]{path.suffix}")
            target.write_text(json.dumps(self.document(chunk), indent=2, ensure_ascii=False), encoding="utf-8")
            paths.append(target)
        return paths

    def write_stream(self, path: Path, messages: Iterable[Msg]) -> int:
        """The same bytes as `write` (one file), written message by message, as the exporter itself writes.

        The benchmark's exports are far larger than memory should hold; returns the number of messages.
        """
        preamble = self.document([])
        del preamble["messages"], preamble["messageCount"]
        head = json.dumps(preamble, indent=2, ensure_ascii=False)
        count = 0
        with path.open("w", encoding="utf-8") as out:
            out.write(head[: -len("\n}")] + ',\n  "messages": [')
            for m in messages:
                body = json.dumps(self.message(m), indent=2, ensure_ascii=False).replace("\n", "\n    ")
                out.write(("\n    " if count == 0 else ",\n    ") + body)
                count += 1
            out.write(("\n  ]" if count else "]") + f',\n  "messageCount": {count}\n}}')
        return count


def _str(value: int | None) -> str | None:
    return None if value is None else str(value)
