"""A member's export as Markdown: each revision and summary stays one list item, however many lines its text has."""

from __future__ import annotations

import contextlib
from datetime import UTC, date, datetime

from bot.memory import export
from db.export import MemberData
from db.facts import Revision

FACTS = "- Ana runs on Saturdays\n- Ana is vegetarian"


async def test_texts_of_several_lines_stay_in_their_list_item(monkeypatch):
    data = MemberData(
        facts=FACTS,
        revisions=[Revision(7, "remember", "", FACTS, 42, datetime(2026, 3, 1, 12, tzinfo=UTC))],
        days=[(date(2026, 3, 1), "Ana planned the route.\n\n# not a heading\nShe brought the map.")],
        weeks=[(date(2026, 3, 7), "A week of runs.\n- not an item of its own")],
        rollups=[("month", date(2026, 3, 1), date(2026, 3, 31), "March:\nten runs")],
    )

    async def member_data(session: object, guild_id: int, user_id: int) -> MemberData:
        return data

    monkeypatch.setattr(export, "member_data", member_data)
    markdown = await export.member_markdown(contextlib.nullcontext, 1, 2, "Ana")  # type: ignore[arg-type]
    sections = dict(part.split("\n", 1) for part in markdown.split("\n## ")[1:])
    # A later line of a text is indented under its item (a blank line stays blank): it renders inside the item,
    # never as a heading, an item of its own or a paragraph after the list.
    assert sections["Fact revisions"] == (
        "\n- #7 2026-03-01 12:00 UTC, remember (asked by 42): - Ana runs on Saturdays\n  - Ana is vegetarian\n"
    )
    assert sections["Daily summaries"] == (
        "\n- 2026-03-01: Ana planned the route.\n\n  # not a heading\n  She brought the map.\n"
    )
    assert sections["Weekly history"] == "\n- up to 2026-03-07: A week of runs.\n  - not an item of its own\n"
    assert sections["Weeks and months (rollups)"] == "\n- month 2026-03-01 to 2026-03-31: March:\n  ten runs\n"
