"""Messages read by id within the read scope: the vectors' nearest candidates, and the turns around hits."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import BigInteger, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from db import scope as scoping
from db.scope import Scope
from db.search import driver
from db.search.types import TURN_COLUMNS, Turn, turns_of
from db.types import UTCDateTime


async def _sqlite_turns(session: AsyncSession, sql: str, params: Mapping[str, object]) -> list[Turn] | None:
    """Turns read straight through SQLite's driver (None: not SQLite); see `driver.sqlite_rows`."""
    rows = await driver.sqlite_rows(session, sql, params)
    return None if rows is None else [Turn(m, c, u, body, driver.utc(at), r) for m, c, u, body, at, r in rows]


async def messages_by_id(session: AsyncSession, guild_id: int, ids: list[int], *, here: int | None) -> list[Turn]:
    """Those of the given messages a reader in `here` may see (the read scope decides, not the caller)."""
    if not ids:
        return []
    where = scoping.where(scoping.MESSAGES, "c")
    sql = f"SELECT {TURN_COLUMNS} FROM chat_history AS c WHERE c.message_id IN :ids AND {where}"
    params = {"ids": ids, **scoping.params(Scope(guild_id, here), scoping.MESSAGES)}
    if (turns := await _sqlite_turns(session, sql, params)) is not None:
        return turns
    query = scoping.typed(text(sql).columns(timestamp=UTCDateTime()), scoping.MESSAGES)
    return turns_of(await session.execute(query.bindparams(driver.id_list("ids")), params))


ANSWERING = 3  # the turns read after a hit that asks (one after any other hit)


async def around(
    session: AsyncSession,
    guild_id: int,
    hits: list[Turn],
    *,
    here: int | None,
    neighbours: int,
    until: datetime | None = None,
) -> list[Turn]:
    """The turns around hits, in one statement: the message before and after each of the first `neighbours`
    hits in its channel (the ANSWERING after one that asks), what each hit replies to, and the replies to it (all
    within the read scope), written before `until` if given (a replayed moment: the turn after it is not said
    yet)."""
    if not hits:
        return []
    values, sides = _neighbour_ids(hits[:neighbours])
    parents = [h.reply_to_id for h in hits if h.reply_to_id is not None]
    # The ids first, each source on its own index, then their rows: one WHERE with the sources OR-ed together
    # made SQLite's planner scan the guild's messages (7–14 ms at 100,000 messages, for a single hit).
    replies = "SELECT x.message_id FROM chat_history AS x WHERE x.reply_to_id IN :hits AND x.reply_to_id IS NOT NULL"
    ids = [*sides, replies]
    if parents:
        ids.append("SELECT x.message_id FROM chat_history AS x WHERE x.message_id IN :parents")
    sql = f"""
        SELECT {TURN_COLUMNS} FROM chat_history AS c
        WHERE c.message_id IN ({" UNION ALL ".join(ids)})
          AND {scoping.where(scoping.MESSAGES, "c")}{" AND c.timestamp < :until" if until else ""}
    """
    params = {
        **({"until": until} if until else {}),
        **values,
        "hits": [h.message_id for h in hits],
        **({"parents": parents} if parents else {}),
        **scoping.params(Scope(guild_id, here), scoping.MESSAGES),
    }
    if (turns := await _sqlite_turns(session, sql, params)) is not None:
        return turns
    query = scoping.typed(text(sql).columns(timestamp=UTCDateTime()), scoping.MESSAGES).bindparams(
        *(bindparam(k, type_=BigInteger()) for k in values),
        *([bindparam("until", type_=UTCDateTime())] if until else []),
        driver.id_list("hits"),
        *([driver.id_list("parents")] if parents else []),
    )
    return turns_of(await session.execute(query, params))


def _neighbour_ids(hits: list[Turn]) -> tuple[dict[str, int], list[str]]:
    """Subqueries for the ids of the turns beside each hit in its channel, and their parameters."""
    values: dict[str, int] = {}
    sides = []
    for i, hit in enumerate(hits):
        values |= {f"c{i}": hit.channel_id, f"n{i}": hit.message_id}
        sides.append(
            f"SELECT (SELECT max(x.message_id) FROM chat_history AS x WHERE x.channel_id = :c{i} "
            f"AND x.message_id < :n{i})"
        )
        # A hit that asks: the turns after it, where its answer is ("what did the vet say?" → "nothing serious,
        # just a sprained paw", which shares no word with any later question), someone's line in between or not.
        if hit.text.rstrip().endswith("?"):
            sides.append(
                f"SELECT message_id FROM (SELECT x.message_id FROM chat_history AS x WHERE x.channel_id = :c{i} "
                f"AND x.message_id > :n{i} ORDER BY x.message_id LIMIT {ANSWERING}) AS a{i}"
            )
        else:
            sides.append(
                f"SELECT (SELECT min(x.message_id) FROM chat_history AS x WHERE x.channel_id = :c{i} "
                f"AND x.message_id > :n{i})"
            )
    return values, sides
