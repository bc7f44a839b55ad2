"""Small DiscordChatExporter-format JSON exports for tests (bench/import_export.py uses fakes.exporter_json)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

GUILD_ID = 2**60 + 77
CHANNEL_ID = 2**60 + 78
AUTHORS = [(2**60 + 501, "ana", "Ana"), (2**60 + 502, "bob", None), (2**60 + 503, "helperbot", None)]


def write_export(path: Path, count: int, *, start: datetime | None = None) -> Path:
    """An export of `count` messages; every 10th by a bot, every 5th a reply, some edited, some with mentions."""
    start = start or datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    messages = []
    for i in range(count):
        author_id, name, nickname = AUTHORS[2] if i % 10 == 9 else AUTHORS[i % 2]
        at = start + timedelta(minutes=i)
        messages.append(
            {
                "id": str(2**60 + 1_000_000 + i),
                "type": "Default",
                "timestamp": at.isoformat(),
                "timestampEdited": (at + timedelta(seconds=30)).isoformat() if i % 7 == 3 else None,
                "isPinned": False,
                "content": f"message {i} about the trip to Lisbon" + (f" <@{AUTHORS[1][0]}>" if i % 4 == 0 else ""),
                "author": {
                    "id": str(author_id),
                    "name": name,
                    "discriminator": "0000",
                    "nickname": nickname,
                    "isBot": author_id == AUTHORS[2][0],
                },
                "mentions": [{"id": str(AUTHORS[1][0]), "name": "bob"}] if i % 4 == 0 else [],
                **(
                    {"reference": {"messageId": str(2**60 + 1_000_000 + i - 1), "channelId": str(CHANNEL_ID)}}
                    if i % 5 == 4
                    else {}
                ),
            }
        )
    export = {
        "guild": {"id": str(GUILD_ID), "name": "Test Guild", "iconUrl": ""},
        "channel": {"id": str(CHANNEL_ID), "type": "GuildTextChat", "name": "general", "topic": None},
        "dateRange": {"after": None, "before": None},
        "messages": messages,
        "messageCount": count,
    }
    path.write_text(json.dumps(export), encoding="utf-8")
    return path
