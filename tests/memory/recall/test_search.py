"""Recall search on SQLite (FTS5) and PostgreSQL (tsvector): same top hits, decay, sync, privacy, deletion."""

from __future__ import annotations

import math
import shutil
from datetime import date, timedelta
from functools import partial

import pytest
from sqlalchemy import update

from bot.memory.manager import MemoryManager
from bot.memory.recall.question import words_of as query_terms
from bot.memory.recall.ranking import RECENCY, relative_age
from bot.settings import Settings
from db.engine import create_engine
from db.search import driver, planner, turns
from db.search import messages as message_store
from db.search import summaries as summary_store
from db.search.types import Search, decay_rate
from db.summaries import save_day
from tests.factories import ALICE, BOB, CHANNEL, GUILD, OTHER_GUILD, T0, message
from tests.memory.facts.test_store import AppendingModel

CAROL = 2**60 + 1003
NOW = T0
CORPUS = [  # (days ago, author, text)
    (40, BOB, "My chemistry exam is on the 14th, wish me luck"),
    (38, ALICE, "We decided: the trip goes to Lisbon in May, train both ways"),
    (35, CAROL, "Anyone up for climbing on Saturday?"),
    (20, BOB, "The exam went fine, I think"),
    (9, ALICE, "Pizza tonight?"),
    (3, CAROL, "Trip photos from last year are in the drive"),
    (1, ALICE, "Good morning everyone"),
]


async def fill(memory: MemoryManager, corpus=CORPUS, guild=GUILD) -> dict[str, int]:
    ids = {}
    for days, author, text in corpus:
        msg = message(text, author=author, guild=guild, at=NOW - timedelta(days=days))
        ids[text] = msg.message_id
        await memory.intake.message(msg)
    await memory.flush()
    return ids


def test_query_terms_drop_question_scaffolding():
    assert query_terms("When did Bob mention his exam?") == ["bob", "exam"]
    assert query_terms("What did we decide about the trip last month?") == ["decide", "trip"]
    assert query_terms("what about it?") == []


def test_decay_matches_the_half_life():
    rate = decay_rate(30)
    assert math.exp(-rate * 7) == pytest.approx(0.85, abs=0.005)
    assert math.exp(-rate * 30) == pytest.approx(0.5)
    assert decay_rate(0) == 0.0


def test_relative_age_labels():
    day = T0
    assert [relative_age(day - timedelta(days=d), day) for d in (0, 1, 5, 21, 75, 800)] == [
        "today",
        "yesterday",
        "5 days ago",
        "3 weeks ago",
        "2 months ago",
        "2 years ago",
    ]


async def test_finds_old_answers_labelled_with_links(memory):
    ids = await fill(memory)
    hits = await memory.recollection.recall(GUILD, "when is Bob's chemistry exam?", now=NOW)
    assert hits[0].message_id == ids["My chemistry exam is on the 14th, wish me luck"]
    assert hits[0].jump_url == f"https://discord.com/channels/{GUILD}/{CHANNEL}/{hits[0].message_id}"
    assert hits[0].label(NOW, "UTC") == f"{(NOW - timedelta(days=40)):%Y-%m-%d}, 5 weeks ago"
    decided = await memory.recollection.recall(GUILD, "What did we decide about the trip?", now=NOW)
    assert decided[0].text.startswith("We decided: the trip goes to Lisbon")
    assert await memory.recollection.recall(GUILD, "what about it?", now=NOW) == []
    assert await memory.recollection.recall(OTHER_GUILD, "chemistry exam", now=NOW) == []  # guilds never mix


async def test_recency_is_a_gentle_prior_and_relevance_wins(memory):
    await fill(memory, [(200, ALICE, "the blue kettle"), (2, BOB, "the blue kettle"), (1, CAROL, "kettle")])
    hits = {h.user_id: h.score for h in await memory.recollection.recall(GUILD, "blue kettle", now=NOW)}
    assert max(hits, key=hits.__getitem__) == BOB  # the same words: the newer one first …
    assert 0 < hits[BOB] - hits[ALICE] <= RECENCY  # … by no more than the prior
    assert hits[ALICE] > hits[CAROL]  # a complete answer 200 days old beats yesterday's partial one


async def test_the_plan_for_common_words_finds_the_same_best_hits(memory, monkeypatch):
    await fill(memory)
    questions = ["chemistry exam", "decide trip Lisbon train", "exam went fine"]
    exact = [[h.text for h in await memory.recollection.recall(GUILD, q, now=NOW, limit=1)] for q in questions]
    monkeypatch.setattr(planner, "MANY", 0)  # as if every word matched millions of messages
    monkeypatch.setattr(planner, "RECENT", 1)  # and only the newest match of any word were read
    planned = [[h.text for h in await memory.recollection.recall(GUILD, q, now=NOW, limit=1)] for q in questions]
    assert planned == exact and all(exact)  # the weeks-old complete answers are still found
    if memory.engine.dialect.name != "sqlite":
        return  # PostgreSQL ranks every match with its GIN index; the plan is SQLite's
    # One common word alone: only its newest matches are read (ranking millions is what the plan avoids).
    assert [h.text for h in await memory.recollection.recall(GUILD, "trip", now=NOW)] == [
        "Trip photos from last year are in the drive"
    ]


async def test_common_words_and_busy_members_leave_the_full_text_query_but_not_the_ranking(memory, monkeypatch):
    await fill(memory)
    asked = [
        ("chemistry exam", None),
        ("decide trip Lisbon train", None),
        ("exam", BOB),
        ("trip", ALICE),
        ("morning pizza trip", None),
    ]

    async def best():
        return [
            [h.text for h in await memory.recollection.recall(GUILD, q, now=NOW, user_id=u, limit=2)] for q, u in asked
        ]

    exact = await best()
    monkeypatch.setattr(planner, "COMMON", 1)  # every member, and every word said twice, is "common"
    planner._counts.clear()
    assert await best() == exact and all(exact)
    assert exact[2] == ["The exam went fine, I think", "My chemistry exam is on the 14th, wish me luck"]
    assert exact[3] == ["We decided: the trip goes to Lisbon in May, train both ways"]  # only Alice's


async def test_filters_by_member_and_period(memory):
    await fill(memory)
    exam = await memory.recollection.recall(GUILD, "exam", now=NOW, user_id=ALICE)
    assert exam == []
    trip = await memory.recollection.recall(GUILD, "trip", now=NOW, since=NOW - timedelta(days=10))
    assert [h.user_id for h in trip] == [CAROL]
    old = await memory.recollection.recall(GUILD, "trip", now=NOW, until=NOW - timedelta(days=10))
    assert [h.user_id for h in old] == [ALICE]


async def test_edits_and_deletes_are_followed(memory):
    ids = await fill(memory)
    pizza = ids["Pizza tonight?"]
    await memory.intake.edit(pizza, "Sushi tonight?", NOW - timedelta(days=9) + timedelta(minutes=5))
    await memory.flush()
    assert await memory.recollection.recall(GUILD, "pizza", now=NOW) == []
    assert [h.message_id for h in await memory.recollection.recall(GUILD, "sushi", now=NOW)] == [pizza]
    await memory.intake.delete([pizza])
    await memory.flush()
    assert await memory.recollection.recall(GUILD, "sushi", now=NOW) == []


async def test_purges_and_opt_outs_are_honoured(memory):
    await fill(memory)
    await memory.admin.opt_out(GUILD, BOB, delete_stored=False)  # kept, but no longer shown to anyone
    assert await memory.recollection.recall(GUILD, "exam", now=NOW) == []
    await memory.admin.opt_in(GUILD, BOB)
    assert len(await memory.recollection.recall(GUILD, "exam", now=NOW)) == 2
    await memory.admin.forget_member(GUILD, BOB)
    assert await memory.recollection.recall(GUILD, "exam", now=NOW) == []
    await memory.admin.purge_before(GUILD, NOW - timedelta(days=30))
    assert await memory.recollection.recall(GUILD, "Lisbon", now=NOW) == []
    await memory.admin.purge_guild(GUILD)
    assert await memory.recollection.recall(GUILD, "trip photos", now=NOW) == []


async def test_private_channels_are_only_recalled_where_they_are(memory):
    staff = CHANNEL + 1
    await memory.channels.observe(GUILD, staff, is_private=True)
    secret = message("the vault code is 4242", channel=staff, at=NOW - timedelta(days=20))
    await memory.intake.message(secret)
    await memory.flush()
    assert await memory.recollection.recall(GUILD, "vault code", now=NOW, channel_id=CHANNEL) == []
    assert [h.message_id for h in await memory.recollection.recall(GUILD, "vault code", now=NOW, channel_id=staff)] == [
        secret.message_id
    ]


async def test_daily_summaries_are_searched_and_dropped_with_their_day(memory):
    await fill(memory)
    day = (NOW - timedelta(days=38)).date()
    async with memory.sessions() as session, session.begin():
        await save_day(
            session, GUILD, day, {ALICE: "Alice settled the Lisbon itinerary."}, model="m", version="1", at=NOW
        )
    hits = await memory.recollection.recall(GUILD, "Lisbon itinerary", now=NOW)
    assert hits[0].kind == "summary" and hits[0].user_id == ALICE and hits[0].at.date() == day
    async with memory.sessions() as session, session.begin():  # a recomputed summary replaces the text
        from db.models import DailySummary

        await session.execute(update(DailySummary).values(summary="Alice went quiet."))
    assert all(h.kind == "message" for h in await memory.recollection.recall(GUILD, "Lisbon itinerary", now=NOW))
    await memory.admin.forget_member(GUILD, ALICE)
    assert await memory.recollection.recall(GUILD, "quiet", now=NOW) == []
    assert isinstance(day, date)


async def test_everyones_and_each_members_summaries_come_from_one_statement(memory, monkeypatch):
    """A question naming members searches everyone's daily summaries and each member's in one statement, with
    each author's own best `limit` (not a shared one), ranked as alone."""
    days = [(NOW - timedelta(days=d)).date() for d in range(1, 9)]
    async with memory.sessions() as session, session.begin():
        for i, day in enumerate(days):
            await save_day(
                session,
                GUILD,
                day,
                {
                    ALICE: f"Alice planned the Lisbon trip {'again ' * i}and booked trains.",
                    BOB: f"Bob talked about the trip {'and Lisbon ' * (i % 3)}and his exam.",
                },
                model="m",
                version="1",
                at=NOW,
            )
        await save_day(
            session, GUILD + 1, days[0], {ALICE: "Alice's Lisbon trip elsewhere."}, model="m", version="1", at=NOW
        )
    statements: list[str] = []
    from sqlalchemy import event

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    search = partial(
        summary_store.search_summaries, terms=["lisbon", "trip"], since=date.min, until=date.max,
        today=NOW.date(), half_life_days=0, limit=3,
    )  # fmt: skip
    event.listen(memory.engine.sync_engine, "before_cursor_execute", count)
    try:
        async with memory.sessions() as session:
            together = await search(session, GUILD, authors=[None, ALICE, BOB])
    finally:
        event.remove(memory.engine.sync_engine, "before_cursor_execute", count)
    assert len(statements) == 1
    async with memory.sessions() as session:
        apart = {a: (await search(session, GUILD, authors=[a]))[a] for a in (None, ALICE, BOB)}
    assert together == apart
    assert [len(rows) for rows in together.values()] == [3, 3, 3]
    assert {r.user_id for r in together[ALICE]} == {ALICE} and {r.user_id for r in together[BOB]} == {BOB}
    assert all("elsewhere" not in r.text for rows in together.values() for r in rows)  # another guild's
    # Each author's LIMIT comes after their own ranking: their best three of all their summaries, best first.
    async with memory.sessions() as session:
        every = await search(session, GUILD, authors=[None, ALICE, BOB], limit=100)
    assert [len(every[a]) for a in (ALICE, BOB)] == [len(days), len(days)] and len(every[None]) == 2 * len(days)
    for author, rows in every.items():
        assert [r.score for r in rows] == sorted((r.score for r in rows), reverse=True)
        assert together[author] == rows[:3]


@pytest.fixture
async def both(sqlite_template, pg_database, tmp_path):
    """The same bot on a fresh SQLite file and on the (truncated) PostgreSQL database."""
    from tests.conftest import _truncate_pg

    path = tmp_path / "copy.db"
    shutil.copy(sqlite_template, path)
    await _truncate_pg(pg_database)
    managers = []
    for url in (f"sqlite+aiosqlite:///{path}", pg_database):
        engine = create_engine(url)
        settings = Settings(_env_file=None, database_url=url, gemini_api_key=None, discord_token=None)
        memory = MemoryManager(engine, settings, facts_model=AppendingModel())
        await memory.start()
        managers.append((memory, engine))
    yield [m for m, _ in managers]
    for memory, engine in managers:
        await memory.close()
        await engine.dispose()


QUESTIONS = [
    "when is Bob's chemistry exam?",
    "What did we decide about the trip?",
    "climbing Saturday",
    "how did the exam go",
    "trip photos",
    "pizza",
    "morning",
    "Lisbon train",
]


async def test_same_top_hits_on_sqlite_and_postgresql(both):
    results = []
    for memory in both:
        await fill(memory, [(d, a, t) for d, a, t in CORPUS])
        texts = []
        for question in QUESTIONS:
            texts.append([h.text for h in await memory.recollection.recall(GUILD, question, now=NOW, limit=3)])
        results.append(texts)
    sqlite, postgresql = results
    assert all(sqlite)  # every question finds something
    assert sqlite == postgresql


async def test_sqlites_lean_reads_return_what_the_session_path_returns(memory, monkeypatch):
    """messages_by_id and around read SQLite through the driver; the same rows as through SQLAlchemy, scope
    included (a private channel, an opted-out member, another guild, replies both ways)."""
    private = CHANNEL + 7
    await memory.intake.channel(GUILD, private, is_private=True)
    rows = [
        message("first words", author=ALICE, at=NOW - timedelta(hours=5)),
        message("a secret plan", author=ALICE, channel=private, at=NOW - timedelta(hours=4)),
        message("carol speaks", author=CAROL, at=NOW - timedelta(hours=3)),
        message("elsewhere", author=ALICE, guild=OTHER_GUILD, at=NOW - timedelta(hours=2)),
    ]
    rows.append(message("a reply to the first", author=BOB, at=NOW - timedelta(hours=1), reply_to=rows[0].message_id))
    rows.append(message("last words", author=ALICE, at=NOW - timedelta(minutes=30), reply_to=rows[2].message_id))
    for row in rows:
        await memory.intake.message(row)
    await memory.flush()
    await memory.admin.opt_out(GUILD, CAROL, delete_stored=False)
    ids = [r.message_id for r in rows]

    async def read() -> tuple[list, ...]:
        async with memory.sessions() as session:
            found = await turns.messages_by_id(session, GUILD, ids, here=CHANNEL)
            near = await turns.around(session, GUILD, found[:2], here=CHANNEL, neighbours=2)
            searched = [
                await message_store.search_messages(
                    session,
                    Search(
                        GUILD,
                        ("words", "secret", "reply"),
                        NOW,
                        CHANNEL,
                        10,
                        user_id=user,
                        since=since,
                        until=until,
                        half_life_days=30,
                    ),
                )
                for user, since, until in [
                    (None, None, None),
                    (ALICE, None, None),
                    (None, NOW - timedelta(hours=4, minutes=30), NOW - timedelta(minutes=45)),
                ]
            ]
            return sorted(found, key=lambda t: t.message_id), sorted(near, key=lambda t: t.message_id), searched

    lean = await read()
    monkeypatch.setattr(driver, "sqlite_rows", lambda *args: _none())
    assert await read() == lean
    assert {t.text for t in lean[0]} == {"first words", "a reply to the first", "last words"}
    assert lean[1], "the neighbours and replies of the first hits"
    everyone, alices, window = ([r.text for r in rows] for rows in lean[2])
    assert sorted(everyone) == ["a reply to the first", "first words", "last words"]
    assert sorted(alices) == ["first words", "last words"]
    assert window == ["a reply to the first"]


async def _none() -> None:
    return None


async def test_reading_only_the_best_matches_first_gives_the_rows_every_match_gives(memory, monkeypatch):
    """SQLite reads the CUT × limit best matches first: the same rows, in the same order, as reading every
    match, also when the read scope hides most of the best ones (then every match is read)."""
    staff = CHANNEL + 1
    await memory.channels.observe(GUILD, staff, is_private=True)
    corpus = [
        (day, author, f"my exam notes from day {day}" if day % 5 == 0 else f"the exam is on day {day}, see you")
        for day, author in zip(range(1, 41), [ALICE, BOB, CAROL, ALICE] * 10, strict=True)
    ]
    corpus += [(day, BOB, "exam notes, exam notes, staff room") for day in range(41, 49)]  # the best, hidden
    for days, author, text in corpus:
        channel = staff if "staff room" in text else CHANNEL
        await memory.intake.message(message(text, author=author, channel=channel, at=NOW - timedelta(days=days)))
    await memory.flush()
    searches = [(None, CHANNEL, 5), (BOB, CHANNEL, 3), (None, CHANNEL, 12), (None, staff, 5), (BOB, staff, 20)]

    async def read():
        async with memory.sessions() as session:
            return [
                [
                    (r.message_id, r.relevance)
                    for r in await message_store.search_messages(
                        session, Search(GUILD, ("exam", "notes"), NOW, here, limit, user_id=user)
                    )
                ]
                for user, here, limit in searches
            ]

    cut = []
    original = message_store._search_messages

    async def counting(*args, plan, **kwargs):
        rows = await original(*args, plan=plan, **kwargs)
        if plan is not None and "LIMIT -1" not in plan["m_any"][1]:
            cut.append(len(rows))
        return rows

    monkeypatch.setattr(message_store, "_search_messages", counting)
    monkeypatch.setattr(planner, "CUT", 1)  # the best `limit` matches only: hidden ones leave it short
    first = await read()
    if memory.engine.dialect.name != "sqlite":
        assert not cut
        return
    assert cut, "the cut plan was tried"
    assert min(cut) < 5, "and fell short where the best matches were hidden, so every match was read"
    monkeypatch.setattr(planner, "cut", lambda *args: None)
    assert first == await read() and all(first)
    assert len(first[2]) == 12 and len({m for m, _ in first[2]}) == 12


async def test_busy_members_searches_share_everyones_statement_and_find_the_same(memory, monkeypatch):
    """A member whose scope left the full-text query (a busy one) is searched in everyone's statement on SQLite:
    everyone's best and each member's own best are what separate searches find."""
    await fill(memory)
    corpus = [(day, [ALICE, BOB, CAROL][day % 3], f"exam trip notes {'exam ' * (day % 4)}{day}") for day in range(30)]
    await fill(memory, corpus)
    staff = CHANNEL + 1
    await memory.channels.observe(GUILD, staff, is_private=True)
    await memory.intake.message(message("exam exam exam trip", author=BOB, channel=staff, at=NOW))
    await memory.flush()
    statements = []
    original = message_store._search_messages

    async def counting(*args, **kwargs):
        statements.append(kwargs.get("members"))
        return await original(*args, **kwargs)

    monkeypatch.setattr(message_store, "_search_messages", counting)

    async def both(words, members, limit, member_limit):
        async with memory.sessions() as session:
            shared = await message_store.search_with_members(
                session, Search(GUILD, tuple(words), NOW, CHANNEL, limit), members, member_limit
            )

            async def search(user_id, limit):
                return await message_store.search_messages(
                    session, Search(GUILD, tuple(words), NOW, CHANNEL, limit, user_id=user_id)
                )

            apart = (
                await search(user_id=None, limit=limit),
                {m: await search(user_id=m, limit=member_limit) for m in members},
            )
        return shared, apart

    monkeypatch.setattr(planner, "COMMON", 1)  # every member "busy", every word said twice "common"
    planner._counts.clear()
    for words, members, limit, member_limit in (
        (["exam", "notes"], [BOB], 5, 4),
        (["exam", "trip", "notes"], [ALICE, CAROL], 3, 6),
        (["chemistry", "exam"], [BOB, ALICE], 2, 50),
    ):
        statements.clear()
        shared, apart = await both(words, members, limit, member_limit)
        assert shared == apart and shared[0] and all(shared[1].values())
        assert all(r.user_id == m for m, rows in shared[1].items() for r in rows)
        assert "exam exam exam trip" not in {r.text for rows in (shared[0], *shared[1].values()) for r in rows}
        if memory.engine.dialect.name == "sqlite":
            assert statements[0] == members  # one statement for everyone and the members


def _watch_counts(monkeypatch) -> list[str]:
    """The count statements recall's plans run from now on (none counted before)."""
    planner._counts.clear()
    counted: list[str] = []
    original = driver.sqlite_rows

    async def watching(session, sql, params):
        if "count(*)" in sql:  # the statement, and the tokens it counts after it
            counted.append(sql + " -- " + " ".join(str(v) for k, v in sorted(params.items()) if k[1:].isdigit()))
        return await original(session, sql, params)

    monkeypatch.setattr(driver, "sqlite_rows", watching)
    return counted


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the counts choose SQLite's full-text plan
async def test_words_and_members_not_counted_lately_are_counted_in_one_statement(memory, monkeypatch):
    """The plan's counts (how common each word and member is) cost one statement per search, not one each; the
    plan they choose finds what separately counted plans find."""
    await fill(memory)
    counted = _watch_counts(monkeypatch)
    words = ["exam", "trip", "pizza", "lisbon"]
    async with memory.sessions() as session:
        together = await message_store.search_with_members(
            session, Search(GUILD, tuple(words), NOW, CHANNEL, 5), [ALICE, BOB], 5
        )
        assert len(counted) <= 2  # the guild's scope (a shared file) may take its own, once
        assert len([s for s in counted if s.count("MATCH") >= len(words) + 2]) == 1
        counted.clear()
        again = await message_store.search_with_members(
            session, Search(GUILD, tuple(words), NOW, CHANNEL, 5), [ALICE, BOB], 5
        )
        assert counted == []  # counted lately: no statement
        planner._counts.clear()
        for token in [f"scope:u{ALICE}", f"scope:u{BOB}", *(f'body:"{w}"' for w in words)]:
            await planner._count(session, token)  # one by one, as before
        apart = await message_store.search_with_members(
            session, Search(GUILD, tuple(words), NOW, CHANNEL, 5), [ALICE, BOB], 5
        )
    assert together == again == apart and together[0]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the cut is SQLite's
async def test_a_search_with_fewer_matches_than_the_cut_reads_takes_one_statement(memory, monkeypatch):
    """Where the words hold no more rows than the cut would read, the cut would read them all and, short of
    `limit` (which is then usual), read them again: the whole plan runs once instead, with the same rows."""
    await fill(memory)
    planner._counts.clear()
    plans: list[str] = []
    original = message_store._search_messages

    async def counting(*args, plan, **kwargs):
        plans.append(plan["m_any"][1] if plan else "")
        return await original(*args, plan=plan, **kwargs)

    monkeypatch.setattr(message_store, "_search_messages", counting)

    async def search(words):
        async with memory.sessions() as session:
            return await message_store.search_messages(session, Search(GUILD, tuple(words), NOW, CHANNEL, 120))

    few = await search(["exam", "trip"])  # not counted yet: counted beside the cut (_guessed), which read them all
    assert few and len(few) < 120
    assert len(plans) == 1  # one statement (and the count, on the same trip)
    plans.clear()
    planner._counts.clear()
    async with memory.sessions() as session:
        await planner._count(session, 'body:"exam"')  # one word's count from before: maybe out of date
    assert await search(["exam", "trip"]) == few
    assert len(plans) == 2 and plans[1] == " LIMIT -1"  # the short cut is not trusted: the plan runs too
    plans.clear()
    assert await search(["exam", "trip"]) == few
    assert plans == [" LIMIT -1"]  # counted: one statement, every match ranked
    plans.clear()
    monkeypatch.setattr(planner, "CUT", 0)  # "more matches than the cut reads": cut first, then read again
    assert await search(["exam", "trip"]) == few
    assert len(plans) == 2 and plans[1] == " LIMIT -1"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the counts choose SQLite's full-text plan
@pytest.mark.parametrize("common", [False, True])
async def test_words_not_counted_lately_are_counted_on_the_trip_that_searches_them(memory, monkeypatch, common):
    """The count and the search its plan most likely is (the words rare: its cut) go to SQLite's thread together,
    the search sent before the count is back (a trip each was ~2.5 ms of a reply on a busy event loop). The rows
    are the plan's: where the counts choose another plan (`common`: every word said twice is common), it runs."""
    await fill(memory)
    if common:
        monkeypatch.setattr(planner, "COMMON", 1)
    words = ["exam", "notes"]

    async def search():
        async with memory.sessions() as session:
            return await message_store.search_messages(session, Search(GUILD, tuple(words), NOW, CHANNEL, 2))

    planner._counts.clear()
    async with memory.sessions() as session:
        for token in (f'body:"{w}"' for w in words):
            await planner._count(session, token)  # counted first, one by one
    counted_first = await search()
    planner._counts.clear()
    events: list[str] = []
    original = driver.sqlite_rows

    async def watching(session, sql, params):
        kind = "count" if "count(*)" in sql else "search"
        events.append(f"{kind} sent")
        rows = await original(session, sql, params)
        events.append(f"{kind} back")
        return rows

    monkeypatch.setattr(driver, "sqlite_rows", watching)
    guessed = await search()
    assert guessed == counted_first and len(guessed) == 2
    assert events[:3] == ["count sent", "search sent", "count back"]
    assert events.count("search sent") == (2 if common else 1)  # a wrong guess: the plan's own search after


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the counts choose SQLite's full-text plan
async def test_a_question_naming_a_member_counts_its_words_and_the_member_once(memory, monkeypatch):
    """The words and the member are counted ahead together, the words about the member (their name, their id)
    beside them (that search runs on a session of its own): the searches about them (theirs, everyone's, about
    them) ask nothing more, and nothing is counted twice."""
    await fill(memory)
    counted = _watch_counts(monkeypatch)
    hits = await memory.recollection.recall(GUILD, f"what did <@{BOB}> say about the exam?", now=NOW)
    assert hits and len(counted) <= 3  # and the guild's scope, once, where the file is shared
    tokens = [token for statement in counted for token in statement.split(" -- ")[1].split()]
    assert len(tokens) == len(set(tokens))
    assert {'body:"exam"', f"scope:u{BOB}", f'body:"{BOB}"'} <= set(tokens)
    assert max(s.count("MATCH") for s in counted) >= 2  # exam and Bob's scope, in one statement
