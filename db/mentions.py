"""A forgotten member's mentions in what others said: `<@id>` becomes FORMER, wherever and whenever it is written.

A forget-me rewrites the mentions in the rows present at that moment (db/deletion.py). Others' messages said
before it may still be written after it — another process's queue or spill file, a catch-up, an import, a dead
letter — so every write applies the same rewrite (db/tombstones.py `sift`), and so does the window of recent
lines in memory (bot/memory/choices.py). Which ids to rewrite is asked of a predicate: the writers know a
forgotten member only by the digest in their tombstone, never by a list of ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from db.records import IncomingMessage, MessageEdit

FORMER = "@a former member"  # what a mention of a forgotten member becomes in others' messages
MENTION = re.compile(r"<@!?(\d{1,20})>")
Gone = Callable[[int], bool]  # whether a mentioned id is a forgotten member's (for the text's guild and time)
Op = TypeVar("Op")


def unmention(text: str, gone: Gone) -> str:
    """`text` with every mention of a forgotten member replaced by FORMER (the same text when there is none)."""
    if "<@" not in text:  # the common case, cheap to find out
        return text
    return MENTION.sub(lambda m: FORMER if gone(int(m.group(1))) else m.group(0), text)


def unmentioned(op: Op, gone: Gone) -> Op:
    """A message or edit without a forgotten member's mentions (its text and its list of mentioned ids); any other
    operation as it is."""
    if isinstance(op, IncomingMessage):
        content = unmention(op.content, gone)
        mentioned = tuple(u for u in op.mentioned_user_ids if not gone(u))
        if content == op.content and mentioned == op.mentioned_user_ids:
            return op
        return replace(op, content=content, mentioned_user_ids=mentioned)  # type: ignore[return-value]
    if isinstance(op, MessageEdit):
        content = unmention(op.content, gone)
        return op if content == op.content else replace(op, content=content)  # type: ignore[return-value]
    return op


def unmentioned_payload(payload: str, gone: Gone) -> str:
    """A dead letter's payload (db/ingest_rows.py `_payload`) without a forgotten member's mentions."""
    fields = json.loads(payload)
    changed = False
    if isinstance(fields.get("content"), str):
        content = unmention(fields["content"], gone)
        changed, fields["content"] = content != fields["content"], content
    if isinstance(fields.get("mentioned_user_ids"), list):
        kept = [u for u in fields["mentioned_user_ids"] if not (isinstance(u, int) and gone(u))]
        changed = changed or len(kept) != len(fields["mentioned_user_ids"])
        fields["mentioned_user_ids"] = kept
    return json.dumps(fields, ensure_ascii=True) if changed else payload
