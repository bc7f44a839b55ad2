"""`python -m bot recall --at T` and `python -m bot prompt` on an imported guild, on both databases: at T nothing
said, summarised or remembered after T reaches what the model would receive; `prompt` prints the route and the
system and user parts the model would be sent."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import unescape

import pytest

from bot.app import open_app
from bot.settings import Settings
from db.engine import create_engine, create_session_factory
from db.summaries import save_day
from fakes import exporter_json as dce
from fakes.exporter_json import Guild, JsonWriter, Msg, User
from tests.cli.test_imports import run_cli

T = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
PETS = Guild(2**60 + 7100, "Pet Owners")
GENERAL = dce.Channel(2**60 + 7102, dce.TEXT, "general")
ANA, BOB = User(2**60 + 8101, "ana.silva", "Ana"), User(2**60 + 8102, "bobby")
AFTER = "Zanzibar"  # said, summarised and remembered only after T
_ids = iter(range(2**60 + 300_000, 2**60 + 400_000))


def msg(author: User, content: str, at: datetime) -> Msg:
    return Msg(next(_ids), author, at, content)


async def _after_t(db_url: str) -> None:
    """A summary of T's own day and of a later one, and a fact remembered now (long after T), all saying AFTER."""
    engine = create_engine(db_url)
    try:
        async with create_session_factory(engine)() as session, session.begin():
            for day in (T.date(), T.date() + timedelta(days=2)):
                summary = {ANA.id: f"Ana wrote 1 message: the kitten Pixel ran away to {AFTER}"}
                await save_day(session, PETS.id, day, summary, model="offline", version="1", at=T + timedelta(days=3))
    finally:
        await engine.dispose()
    settings = Settings(_env_file=None, database_url=db_url, gemini_api_key=None, discord_token=None)  # type: ignore[call-arg]
    async with open_app(settings) as app:
        fact = f"Ana's kitten Pixel lives in {AFTER} now"
        await app.memory.facts.remember(PETS.id, ANA.id, fact, requested_by=ANA.id)


@pytest.fixture
def imported(db_url: str, tmp_path: Path) -> str:
    said = [
        msg(ANA, "I adopted a kitten named Pixel", T - timedelta(days=2)),
        msg(BOB, "congrats, what colour is the kitten?", T - timedelta(days=2, minutes=-1)),
        msg(ANA, f"the kitten Pixel ran away to {AFTER}", T + timedelta(hours=1)),  # the next turn in the channel
        msg(BOB, f"Pixel the kitten is famous in {AFTER}", T + timedelta(days=2)),
    ]
    export = JsonWriter(PETS, GENERAL).write(tmp_path / "general.json", said)[0]
    result = run_cli(["import", str(export)], db_url, tmp_path)
    assert result.returncode == 0, result.stderr
    asyncio.run(_after_t(db_url))
    return db_url


def test_recall_at_t_shows_nothing_said_summarised_or_remembered_after_t(imported, tmp_path):
    question = ["recall", "--guild", str(PETS.id), "--as", str(ANA.id), "what happened to Pixel the kitten?"]
    now = run_cli(question, imported, tmp_path)
    assert now.returncode == 0, now.stderr
    assert AFTER in now.stdout and "Pixel lives in" in now.stdout  # today, everything is the past
    then = run_cli([*question, "--at", T.isoformat()], imported, tmp_path)
    assert then.returncode == 0, then.stderr
    assert "I adopted a kitten named Pixel" in then.stdout
    assert AFTER not in then.stdout


def test_prompt_prints_the_route_and_what_the_model_receives_as_at_t(imported, tmp_path):
    asked = ["prompt", "--guild", str(PETS.id), "--user", str(ANA.id), "--at", T.isoformat()]
    result = run_cli([*asked, "Elefant, what did I say about Pixel the kitten?"], imported, tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("route: recall\n=== system ===\nYou are Elefant")
    system, user = out.split("=== system ===\n")[1].split("=== answer (offline) ===")[0].split("=== user ===\n")
    assert "Today is Tuesday 2026-03-10 12:00" in system
    assert user.startswith("<author>Ana</author>")
    assert "I adopted a kitten named Pixel" in user
    assert "<message>what did I say about Pixel the kitten?</message>" in user
    assert AFTER not in out
    chat = run_cli([*asked, "Elefant, good morning! sunny today"], imported, tmp_path)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.startswith("route: chat\n=== system ===\n")
    assert "<message>good morning! sunny today</message>" in chat.stdout and AFTER not in chat.stdout


def test_prompt_prints_a_recaps_prompt_with_nothing_said_after_t(imported, tmp_path):
    asked = ["prompt", "--guild", str(PETS.id), "--user", str(BOB.id), "--at", (T + timedelta(hours=2)).isoformat()]
    result = run_cli([*asked, "Elefant, catch me up on the last 3 days"], imported, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("route: recap\n=== system ===\nYou are Elefant, a Discord bot")
    user = result.stdout.split("=== user ===\n", 1)[1].split("=== answer (offline) ===")[0]
    assert 'by="Ana">I adopted a kitten named Pixel</m>' in user
    assert f'by="Ana">the kitten Pixel ran away to {AFTER}</m>' in user  # an hour after T, before the moment
    assert f"famous in {AFTER}" not in result.stdout  # said two days after T


def test_prompt_shows_a_facts_change_without_making_it(imported, tmp_path):
    asked = ["prompt", "--guild", str(PETS.id), "--user", str(ANA.id), "Elefant, remember that I like dogs"]
    result = run_cli(asked, imported, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "route: remember"
    about = run_cli(["recall", "--guild", str(PETS.id), "--as", str(ANA.id), "dogs?"], imported, tmp_path)
    assert "like dogs" not in about.stdout


def test_recall_prints_exactly_the_memory_a_reply_sends(imported, tmp_path):
    """One assembly (bot/memory/assembly.py): what `recall` prints is, byte for byte, the memory part of the prompt
    `prompt` shows for the same message, member and moment (there XML-escaped, as every value of a prompt is)."""
    message = "Elefant, what did Bob ask about Pixel the kitten?"
    at = ["--guild", str(PETS.id), "--at", (T + timedelta(hours=2)).isoformat()]
    # The first read builds and stores the summaries a context reaches (derived data, kept): both read them after.
    run_cli(["recall", *at, "--as", str(ANA.id), message], imported, tmp_path)
    prompted = run_cli(["prompt", *at, "--user", str(ANA.id), message], imported, tmp_path)
    recalled = run_cli(["recall", *at, "--as", str(ANA.id), message], imported, tmp_path)
    assert recalled.returncode == prompted.returncode == 0, recalled.stderr + prompted.stderr
    user = prompted.stdout.split("=== user ===\n", 1)[1]
    sent = user.split("<memory>", 1)[1].split("</memory>", 1)[0]
    assert sent, "the reply received memory"
    assert recalled.stdout == unescape(sent) + "\n"
