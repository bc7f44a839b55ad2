"""Data access for channel scoping: which channels @everyone cannot read, thread parents, admin overrides."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db.models import ChannelPrivacy
from db.upsert import dialect_insert


@dataclass(frozen=True, slots=True)
class ChannelRule:
    """What is known of one channel or thread."""

    is_private: bool
    mode: str  # auto | include | exclude
    parent_id: int | None = None
    channel_type: str | None = None


async def load(session: AsyncSession) -> dict[tuple[int, int], ChannelRule]:
    """Every known channel of every guild."""
    rows = await session.execute(
        select(
            ChannelPrivacy.guild_id,
            ChannelPrivacy.channel_id,
            ChannelPrivacy.is_private,
            ChannelPrivacy.mode,
            ChannelPrivacy.parent_id,
            ChannelPrivacy.channel_type,
        )
    )
    return {(g, c): ChannelRule(p, m, parent, kind) for g, c, p, m, parent, kind in rows}


async def save(
    session: AsyncSession, guild_id: int, channel_id: int, rule: ChannelRule, *, at: datetime, observed: bool = False
) -> None:
    """Store one channel's rule in one statement (several processes may see a new channel at once).

    `observed`: what a message showed of the channel (privacy, parent, type); an admin's mode, perhaps set in
    another process since this one read it, stays as stored.
    """
    insert = dialect_insert(session, ChannelPrivacy).values(
        guild_id=guild_id,
        channel_id=channel_id,
        is_private=rule.is_private,
        mode=rule.mode,
        parent_id=rule.parent_id,
        channel_type=rule.channel_type,
        updated_at=at,
    )
    changed = {name: insert.excluded[name] for name in ("is_private", "parent_id", "channel_type", "updated_at")}
    if not observed:
        changed["mode"] = insert.excluded.mode
    await session.execute(insert.on_conflict_do_update(index_elements=["guild_id", "channel_id"], set_=changed))
