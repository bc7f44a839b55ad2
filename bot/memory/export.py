"""A member's data as a Markdown document: facts, every revision, and the summaries and rollups about them."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.export import member_data


async def member_markdown(sessions: async_sessionmaker[AsyncSession], guild_id: int, user_id: int, name: str) -> str:
    """Everything stored about a member in a guild, as Markdown (messages themselves are not repeated)."""
    async with sessions() as session:
        data = await member_data(session, guild_id, user_id)
    lines = [f"# What Elefant keeps about {name}", "", f"Guild {guild_id}, member {user_id}.", "", "## Facts", ""]
    lines.append(data.facts or "_Nothing._")
    lines += ["", "## Fact revisions", ""]
    lines += [
        _item(
            f"#{r.id} {r.at:%Y-%m-%d %H:%M} UTC, {r.op} (asked by {r.requested_by or 'a deleted member'}): ",
            r.new_blob or "_(empty)_",
        )
        for r in data.revisions
    ] or ["_None._"]
    lines += ["", "## Daily summaries", ""]
    lines += [_item(f"{day}: ", text or "_(nothing notable)_") for day, text in data.days] or ["_None._"]
    lines += ["", "## Weekly history", ""]
    lines += [_item(f"up to {end}: ", text) for end, text in data.weeks] or ["_None._"]
    lines += ["", "## Weeks and months (rollups)", ""]
    lines += [
        _item(f"{kind} {start} to {end}: ", text or "_(nothing notable)_") for kind, start, end, text in data.rollups
    ] or ["_None._"]
    return "\n".join(lines) + "\n"


def _item(head: str, text: str) -> str:
    """One list item: a text of several lines stays in it, its later lines indented under its first."""
    first, *rest = text.splitlines() or [""]
    return "\n".join([f"- {head}{first}", *(f"  {line}" if line.strip() else "" for line in rest)])
