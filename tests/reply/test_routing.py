"""The deterministic fast path: addressing, every phrasing, subjects from mentions, first person, names."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import text as sql

from bot import text
from bot.memory.names import NameDirectory
from bot.reply.routing import Request, Route, address, fast_route, third_person
from db.engine import create_session_factory
from tests.factories import ALICE, BOB, GUILD, message

BOT = 2**60 + 7
CAROL = 2**60 + 1003
CAROL2 = 2**60 + 1004
T0 = datetime(2026, 11, 20, tzinfo=UTC)


class Names:
    """A fixed directory, standing in for member_names (tested for real below)."""

    def __init__(self, table: dict[str, list[int]]) -> None:
        self.table = {k.casefold(): v for k, v in table.items()}

    async def resolve(self, guild_id: int, name: str) -> list[int]:
        return self.table.get(name.strip().lstrip("@").casefold(), [])


NAMES = Names({"bob": [BOB], "ana": [ALICE], "carol": [CAROL, CAROL2], "mary ann": [BOB + 50]})


def req(text: str, **kw) -> Request:
    return Request(guild_id=GUILD, author_id=ALICE, text=text, **kw)


@pytest.mark.parametrize(
    ("content", "replied", "expected"),
    [
        (f"<@{BOT}> remember that I like tea", False, "remember that I like tea"),
        (f"<@!{BOT}>, what do you know about me?", False, "what do you know about me?"),
        ("Elefant, remember: Bob is Sergey", False, "remember: Bob is Sergey"),
        ("elefant remember that x", False, "remember that x"),
        ("remember that x", True, "remember that x"),
        ("remember that x", False, None),
        ("Elefantine things", False, None),
        (f"hey <@{BOT}> how are you?", False, "hey how are you?"),
        ("hey elefant, which band did Mel see first?", False, "which band did Mel see first?"),
        ("Hi Elefant remember that x", False, "remember that x"),
        ("hey, @elefant: what did bob say?", False, "what did bob say?"),
        ("hey elefantine things", False, None),
        ("hey everyone, elefant is down again", False, None),
        ("they elefant", False, None),
        # A second mention of the bot is what the message is about, not the address.
        (f"<@{BOT}> remember that <@{BOT}> likes peanuts", False, f"remember that <@{BOT}> likes peanuts"),
        (f"Elefant, remember that <@{BOT}> likes peanuts", False, f"remember that <@{BOT}> likes peanuts"),
    ],
)
def test_address(content, replied, expected):
    assert address(content, bot_user_id=BOT, bot_name="Elefant", replied_to_bot=replied) == expected


@pytest.mark.parametrize(
    ("text", "route", "subject", "fact"),
    [
        ("remember that I like tea", Route.REMEMBER, ALICE, "I like tea"),
        ("remember: my cat is called Tom", Route.REMEMBER, ALICE, "my cat is called Tom"),
        ("Remember that Bob is Sergey", Route.REMEMBER, BOB, "Bob is Sergey"),
        ("please remember Bob's birthday is in May", Route.REMEMBER, BOB, "Bob's birthday is in May"),
        (f"remember that <@{BOB}> is vegetarian", Route.REMEMBER, BOB, f"<@{BOB}> is vegetarian"),
        (f"remember that the keys of <@!{BOB}> are blue", Route.REMEMBER, BOB, f"the keys of <@!{BOB}> are blue"),
        ("remember that Mary Ann plays chess", Route.REMEMBER, BOB + 50, "Mary Ann plays chess"),
        ("forget that I like tea", Route.FORGET, ALICE, "I like tea"),
        (f"forget that <@{BOB}> is vegetarian", Route.FORGET, BOB, f"<@{BOB}> is vegetarian"),
        ("what do you know about me?", Route.ABOUT, ALICE, None),
        (f"what do you know about <@{BOB}>", Route.ABOUT, BOB, None),
        ("What do you know about bob?", Route.ABOUT, BOB, None),
        ("who is Ana?", Route.ABOUT, ALICE, None),
    ],
)
async def test_phrasings(text, route, subject, fact):
    decision = await fast_route(req(text), NAMES)
    assert decision is not None
    assert (decision.route, decision.subject_id, decision.fact) == (route, subject, fact)


@pytest.mark.parametrize("text", ["who's Bob's employer?", "tell me about Ana's band", "who is bobs' landlord?"])
async def test_a_question_about_a_thing_of_someones_is_not_about_the_person(text):
    """ "who's Rui's employer?" asks after the employer (recall), not for everything known about "Rui's employer"."""
    decision = await fast_route(req(text), NAMES)
    assert decision is None or decision.route is not Route.ABOUT


async def test_remember_this_about_user_uses_the_replied_message():
    request = req(f"remember this about <@{BOB}>", reply_to_author_id=CAROL, reply_to_text="he hates mornings")
    decision = await fast_route(request, NAMES)
    assert decision == decision.__class__(Route.REMEMBER, BOB, "he hates mornings", speaker_id=CAROL)


async def test_remember_this_without_about_is_about_the_replied_author():
    request = req("remember this", reply_to_author_id=BOB, reply_to_text="I moved to Lisbon")
    decision = await fast_route(request, NAMES)
    assert decision is not None and (decision.subject_id, decision.fact) == (BOB, "I moved to Lisbon")


async def test_ambiguous_name_lists_candidates():
    decision = await fast_route(req("what do you know about Carol?"), NAMES)
    assert decision is not None and decision.needs_subject and decision.candidates == (CAROL, CAROL2)


@pytest.mark.parametrize("text", ["who is Dr Patel?", "what do you know about the tournament?", "tell me about Zed"])
async def test_about_someone_or_something_no_member_is_a_question_for_recall(text):
    decision = await fast_route(req(text), NAMES)
    assert decision is not None and decision.route is Route.RECALL


async def test_unknown_name_is_reported():
    decision = await fast_route(req("remember that Zed owns a boat"), NAMES)
    assert decision is not None and decision.needs_subject and decision.unknown_name == "Zed"


@pytest.mark.parametrize(
    ("text", "route"),
    [
        ("what did I miss?", Route.RECAP),
        ("hey, what have I missed", Route.RECAP),
        ("catch me up on <#1152921504606847176> since Friday", Route.RECAP),
        ("what happened here this week?", Route.RECAP),
        ("what's been going on here", Route.RECAP),
        ("fill me in", Route.RECAP),
        ("tl;dr please", Route.RECAP),
        ("recap of the last 3 hours", Route.RECAP),
        ("what did we decide about the tournament?", Route.RECAP),
        ("what was decided on the venue", Route.RECAP),
        # further back than a recap reaches, or about something else: a question about the past
        ("What did we decide about the trip last month?", Route.RECALL),
        ("what did we decide about the venue in March?", Route.RECALL),
        ("what happened at the party last year?", Route.RECALL),
        ("do you remember when we decided on pizza", Route.RECALL),
    ],
)
async def test_catching_up_is_a_recap_and_the_far_past_stays_recall(text, route):
    assert (await fast_route(req(text), NAMES)).route is route  # type: ignore[union-attr]


async def test_a_front_end_that_knows_the_route_is_not_routed_again():
    decision = await fast_route(req("<#1152921504606847176> since friday", route=Route.RECAP), NAMES)
    assert decision is not None and decision.route is Route.RECAP


@pytest.mark.parametrize("text", ["how are you?", "tell a joke", "what's the weather", "remember this"])
async def test_everything_else_goes_to_the_router(text):
    assert await fast_route(req(text), NAMES) is None


@pytest.mark.parametrize(
    ("fact", "expected"),
    [
        ("I like tea", "Ana likes tea"),
        ("I am vegetarian", "Ana is vegetarian"),
        ("my cat is called Tom", "Ana's cat is called Tom"),
        ("I study physics", "Ana studies physics"),
        ("I don't eat meat", "Ana does not eat meat"),
        ("I'm from Berlin and I watch anime", "Ana is from Berlin and Ana watches anime"),
        ("I moved to Lisbon", "Ana moved to Lisbon"),
        ("I never eat pork", "Ana never eats pork"),
    ],
)
def test_third_person(fact, expected):
    assert third_person(fact, "Ana") == expected


async def test_name_directory_on_the_database(engine, settings):
    from bot.memory.manager import MemoryManager

    manager = MemoryManager(engine, settings)
    await manager.start()
    await manager.intake.message(message("hi", author=BOB, name="Bob"))
    await manager.intake.message(message("hi", author=CAROL, name="Carol"))
    await manager.intake.message(message("hi", author=CAROL2, name="carol"))
    await manager.intake.message(message("hi", author=ALICE, name="Ana", guild=GUILD + 1))
    await manager.close()
    names = NameDirectory(create_session_factory(engine))
    assert await names.resolve(GUILD, "BOB") == [BOB]
    assert await names.resolve(GUILD, "@carol") == sorted([CAROL, CAROL2])
    assert await names.resolve(GUILD, "Ana") == []  # another guild's member
    # A question's words are looked up together, with the same answers as one by one.
    words = ["BOB", "@carol", "Ana", "lunch", ""]
    assert await names.resolve_all(GUILD, words) == {
        "BOB": [BOB],
        "@carol": sorted([CAROL, CAROL2]),
        "Ana": [],
        "lunch": [],
    }
    texts = [f"hi <@{BOB}>", "no mention", f"<@{CAROL}> and <@{BOB}>"]
    assert await names.render_all(GUILD, texts) == [await names.render_mentions(GUILD, t) for t in texts]
    rendered = await names.render_mentions(GUILD, f"hi <@{BOB}> and <@!{2**60 + 9}>")
    assert rendered == "hi @Bob and @member " + str(2**60 + 9)[-4:]


async def test_names_are_read_once_per_guild_and_follow_writes_drops_and_other_processes(engine, settings):
    """A reply resolves and renders names from memory (no statement); a name noted here is there at once, one
    another process stored appears within BOOK_SECONDS, and a dropped member's name is gone at once."""
    from sqlalchemy import event

    from bot.memory.names import BOOK_SECONDS
    from db import names as name_rows

    sessions = create_session_factory(engine)
    now = [0.0]
    names = NameDirectory(sessions, timer=lambda: now[0])
    async with sessions() as session, session.begin():
        await name_rows.store(session, GUILD, BOB, "Bob", "bob_b", at=T0)
        await name_rows.store(session, GUILD + 1, CAROL, "Carol", None, at=T0)
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        assert await names.resolve(GUILD, "bob_B") == [BOB]
        assert len(statements) == 2  # the guild's names, counted and read once
        assert await names.resolve_all(GUILD, ["Bob", "Carol"]) == {"Bob": [BOB], "Carol": []}  # not another guild's
        assert await names.names(GUILD, {BOB, CAROL}) == {BOB: "Bob"}
        assert len(statements) == 2
        names.note(GUILD, CAROL2, "Caro", None)  # seen in a message: not in SQL yet
        assert await names.resolve(GUILD, "caro") == [CAROL2]
        names.note(GUILD, BOB, "Robert", "bob_b")  # renamed: the old name no longer finds him
        assert await names.resolve_all(GUILD, ["bob", "robert"]) == {"bob": [], "robert": [BOB]}
        assert len(statements) == 2
        async with sessions() as session, session.begin():  # another process stores a member
            await name_rows.store(session, GUILD, ALICE, "Alice", None, at=T0)
        assert await names.resolve(GUILD, "alice") == []  # not seen yet...
        now[0] += BOOK_SECONDS + 1
        assert await names.resolve(GUILD, "alice") == [ALICE]  # ...and seen once the book was read again
        assert await names.resolve(GUILD, "robert") == [BOB]  # noted here, still the newest name
        async with sessions() as session, session.begin():
            await session.execute(sql("DELETE FROM member_names WHERE user_id = :u"), {"u": ALICE})
        names.drop(GUILD, ALICE)  # a forgotten member: gone at once, not after the book's time
        assert await names.resolve(GUILD, "alice") == []
        assert await names.names(GUILD, {ALICE}) == {}
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)


async def test_a_book_read_while_its_guild_was_dropped_is_not_kept(engine, monkeypatch):
    from db import names as name_rows

    sessions = create_session_factory(engine)
    names = NameDirectory(sessions)
    async with sessions() as session, session.begin():
        await name_rows.store(session, GUILD, BOB, "Bob", None, at=T0)
    read = name_rows.names_since

    async def slow_read(session, guild_id, since):
        found = await read(session, guild_id, since)
        names.drop(GUILD, BOB)  # a purge lands while the names are being read
        return found

    monkeypatch.setattr(name_rows, "names_since", slow_read)
    assert await names.resolve(GUILD, "bob") == [BOB]  # this reply read before the purge
    monkeypatch.setattr(name_rows, "names_since", read)
    async with sessions() as session, session.begin():
        await session.execute(sql("DELETE FROM member_names WHERE user_id = :u"), {"u": BOB})
    assert await names.resolve(GUILD, "bob") == []  # the next one reads again


async def test_a_book_follows_renames_shared_names_and_other_processes_renames(engine):
    """The index changes in place: a rename moves a member to the new name only, a name two members share keeps
    the other, and a rename another process stored shows up at the next read of what changed."""
    from datetime import timedelta

    from bot.memory.names import BOOK_SECONDS
    from db import names as name_rows

    sessions = create_session_factory(engine)
    now = [0.0]
    names = NameDirectory(sessions, timer=lambda: now[0])
    async with sessions() as session, session.begin():
        await name_rows.store(session, GUILD, CAROL, "Carol", None, at=T0)
        await name_rows.store(session, GUILD, CAROL2, "carol", "c2", at=T0)
    assert await names.resolve(GUILD, "CAROL") == sorted([CAROL, CAROL2])
    names.note(GUILD, CAROL2, "Caz", "c2")
    assert await names.resolve_all(GUILD, ["carol", "caz", "c2"]) == {"carol": [CAROL], "caz": [CAROL2], "c2": [CAROL2]}
    names.note(GUILD, CAROL2, "carol", "c2")  # and back
    assert await names.resolve(GUILD, "carol") == sorted([CAROL, CAROL2])
    assert await names.resolve(GUILD, "caz") == []
    async with sessions() as session, session.begin():  # another process: Carol is Caroline now
        await name_rows.store(session, GUILD, CAROL, "Caroline", None, at=T0 + timedelta(minutes=1))
    assert await names.resolve(GUILD, "caroline") == []
    now[0] += BOOK_SECONDS + 1
    assert await names.resolve(GUILD, "caroline") == [CAROL]
    assert await names.resolve(GUILD, "carol") == [CAROL2]
    assert await names.names(GUILD, {CAROL, CAROL2}) == {CAROL: "Caroline", CAROL2: "carol"}


async def test_only_deletions_of_names_make_a_guilds_names_be_read_again(engine, settings):
    """Reading a big guild's names costs a reply tens of ms: a facts change, a channel purge or another
    process's change keeps the book; forgetting a member drops it (and their name at once)."""
    from sqlalchemy import event

    from bot.memory.manager import MemoryManager

    manager = MemoryManager(engine, settings)
    await manager.start()
    try:
        await manager.intake.message(message("hi", author=BOB, name="Bob"))
        await manager.intake.message(message("hi", author=CAROL, name="Carol"))
        await manager.flush()
        assert await manager.directory.resolve(GUILD, "bob") == [BOB]
        reads: list[str] = []

        def count(conn, cursor, statement, *args):
            read = statement.lstrip().upper()
            # (SELECT EXISTS: the deletion's statistics step asks whether a table is left empty, db/maintenance.py)
            if "member_names" in statement and read.startswith("SELECT") and not read.startswith("SELECT EXISTS"):
                reads.append(statement)

        event.listen(engine.sync_engine, "before_cursor_execute", count)
        try:
            await manager.admin.purge_channel(GUILD, 999)
            manager.changes.invalidate(GUILD, None, "purge_before", messages_gone=True)  # another process's purge
            assert await manager.directory.resolve(GUILD, "carol") == [CAROL]
            assert reads == []
            await manager.admin.forget_member(GUILD, BOB)
            assert await manager.directory.resolve(GUILD, "bob") == []
            assert len(reads) == 2  # counted and read again
        finally:
            event.remove(engine.sync_engine, "before_cursor_execute", count)
    finally:
        await manager.close()


async def test_a_guild_with_more_names_than_a_book_holds_is_looked_up_in_sql_with_the_same_answers(engine, monkeypatch):
    """Names in memory are bounded: a guild past BOOK_MAX is asked in SQL per call, and guilds beyond NAMES_HELD
    push the least recently asked out; the answers are the same either way."""
    from bot.memory import names as names_module
    from db import names as name_rows

    sessions = create_session_factory(engine)
    async with sessions() as session, session.begin():
        for guild, people in (
            (GUILD, [(BOB, "Bob"), (CAROL, "Carol"), (CAROL2, "carol")]),
            (GUILD + 1, [(BOB, "Rob")]),
        ):
            for user_id, name in people:
                await name_rows.store(session, guild, user_id, name, None, at=T0)

    async def answers(names):
        names.note(GUILD, ALICE, "Ana", None)  # seen, not stored yet
        return (
            await names.resolve_all(GUILD, ["bob", "carol", "ana", "rob"]),
            await names.names(GUILD, {BOB, CAROL, ALICE}),
            await names.resolve(GUILD + 1, "rob"),
        )

    expected = (
        {"bob": [BOB], "carol": sorted([CAROL, CAROL2]), "ana": [ALICE], "rob": []},
        {BOB: "Bob", CAROL: "Carol", ALICE: "Ana"},
        [BOB],
    )
    assert await answers(NameDirectory(sessions)) == expected
    monkeypatch.setattr(names_module, "BOOK_MAX", 2)  # the first guild is "big"
    big = NameDirectory(sessions)
    assert await answers(big) == expected == await answers(big)
    assert GUILD in big._big and GUILD not in big._books and GUILD + 1 in big._books
    monkeypatch.setattr(names_module, "BOOK_MAX", 10)
    monkeypatch.setattr(names_module, "NAMES_HELD", 4)  # room for one guild's book at a time
    small = NameDirectory(sessions)
    assert await answers(small) == expected == await answers(small)
    assert len(small._books) == 1


async def test_an_import_by_another_process_shows_its_members_names_to_a_running_bot(engine, settings, tmp_path):
    """Imported names carry the messages' old times, so no "stored lately" read finds them: the import tells
    every process through the change feed, and their books are read again."""
    from bot.importer import import_file
    from bot.memory.manager import MemoryManager
    from tests.export_files import AUTHORS, GUILD_ID, write_export

    running, importing = MemoryManager(engine, settings), MemoryManager(engine, settings)
    await running.start()
    await importing.start()
    try:
        assert await running.directory.resolve(GUILD_ID, "ana") == []  # the book is read, without her
        path = write_export(tmp_path / "general.json", 20)
        await import_file(importing, path, include_bots=False, progress=False)
        for _ in range(40):  # the feed polls twice a second (NOTIFY is faster on PostgreSQL)
            if await running.directory.resolve(GUILD_ID, "ana"):
                break
            await asyncio.sleep(0.05)
        assert await running.directory.resolve(GUILD_ID, "ana") == [AUTHORS[0][0]]
    finally:
        await importing.close()
        await running.close()


async def test_an_opted_out_members_new_name_is_not_stored(engine, settings):
    from bot.memory.manager import MemoryManager

    manager = MemoryManager(engine, settings)
    await manager.start()
    try:
        await manager.intake.message(message("hi", author=BOB, name="Bob"))
        await manager.admin.opt_out(GUILD, BOB, delete_stored=True)
        await manager.intake.member(GUILD, BOB, "Bobby", "bobby")
        assert await manager.directory.resolve_all(GUILD, ["bob", "bobby"]) == {"bob": [], "bobby": []}
        async with manager.sessions() as session:
            assert (await session.execute(sql("SELECT count(*) FROM member_names"))).scalar() == 0
    finally:
        await manager.close()


async def test_names_are_read_once_for_replies_arriving_together_and_kept_by_when_they_were_asked(engine, monkeypatch):
    """Ten replies at once read a guild's names once; a note (a message) neither marks a guild as asked nor
    escapes the count of names held; the overlay of noted names forgets the longest unnoted first."""
    from bot.memory import names as names_module
    from db import names as name_rows

    ANN, ANJA, ANKE = 2**60 + 7001, 2**60 + 7002, 2**60 + 7003
    sessions = create_session_factory(engine)
    async with sessions() as session, session.begin():
        await name_rows.store(session, GUILD, BOB, "Bob", None, at=T0)
        await name_rows.store(session, GUILD + 1, CAROL, "Carol", None, at=T0)
    reads = []
    read = name_rows.names_since

    async def counted(session, guild_id, since):
        reads.append(guild_id)
        return await read(session, guild_id, since)

    monkeypatch.setattr(name_rows, "names_since", counted)
    names = NameDirectory(sessions, recent=3)
    assert await asyncio.gather(*(names.resolve(GUILD, "bob") for _ in range(10))) == [[BOB]] * 10
    assert reads == [GUILD]
    monkeypatch.setattr(names_module, "NAMES_HELD", 3)
    assert await names.resolve(GUILD + 1, "carol") == [CAROL]  # asked last
    names.note(GUILD, ALICE, "Ana", None)
    names.note(GUILD, ANN, "Ann", None)  # GUILD holds 3 names now, 4 in all: the one asked least lately goes
    assert GUILD not in names._books and GUILD + 1 in names._books and names._books.held == 1
    names.note(GUILD, ALICE, "Ana", None)  # noted again: the newest of the overlay
    names.note(GUILD, ANJA, "Anja", None)
    names.note(GUILD, ANKE, "Anke", None)  # the overlay holds 3: Ann, noted least lately, goes
    assert set(names._recent) == {(GUILD, ALICE), (GUILD, ANJA), (GUILD, ANKE)}
    assert await names.resolve_all(GUILD, ["ana", "anja"]) == {"ana": [ALICE], "anja": [ANJA]}


async def test_a_name_stamped_by_a_clock_ahead_does_not_hide_names_stored_after_it(engine):
    from datetime import timedelta

    from bot.memory.names import BOOK_SECONDS
    from db import names as name_rows

    sessions = create_session_factory(engine)
    now = [0.0]
    names = NameDirectory(sessions, timer=lambda: now[0])
    real = datetime.now(UTC)
    async with sessions() as session, session.begin():
        await name_rows.store(session, GUILD, BOB, "Bob", None, at=real + timedelta(days=1))  # a fast clock
    assert await names.resolve(GUILD, "bob") == [BOB]
    async with sessions() as session, session.begin():
        await name_rows.store(session, GUILD, CAROL, "Carol", None, at=real)
    now[0] += BOOK_SECONDS + 1
    assert await names.resolve(GUILD, "carol") == [CAROL]


def test_words_are_stemmed_by_the_c_stemmer():
    """PyStemmer is a dependency so that snowballstemmer hands out its C stemmer: the same stems, ~23× faster on
    a word not seen yet (a cold ranking stemmed thousands of words in pure Python)."""
    assert type(text._STEMMER).__module__ == "Stemmer"
    assert [text.stem(w) for w in ("allergies", "camping", "moved")] == ["allergi", "camp", "move"]
