"""`python -m bot import` as a person runs it, on both databases: files and folders, what was really stored, the
guilds it went to and what to run next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from sqlalchemy import func, select

from db.models import ChatMessage, DeadLetter
from fakes import exporter_json as dce
from fakes.exporter_json import Guild, JsonWriter, Msg, User
from tests.residue import tables_with

ROOT = Path(__file__).resolve().parents[2]
AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RUNNERS = Guild(2**60 + 7000, "Trail Runners")
CHESS = Guild(2**60 + 9000, "Chess Club")
GENERAL = dce.Channel(2**60 + 7002, dce.TEXT, "general")
VAULT = dce.Channel(2**60 + 7003, dce.PRIVATE_THREAD, "vault-talk", parent=GENERAL)
BOARD = dce.Channel(2**60 + 9002, dce.TEXT, "board")
ANA, BOB = User(2**60 + 8001, "ana.silva", "Ana"), User(2**60 + 8002, "bobby")
HELPER = User(2**60 + 8009, "helperbot", is_bot=True)
_ids = iter(range(2**60 + 100_000, 2**60 + 200_000))


def msg(author: User, content: str, minutes: int = 0, **fields: object) -> Msg:
    return Msg(next(_ids), author, AT + timedelta(minutes=minutes), content, **fields)  # type: ignore[arg-type]


def run_cli(args: list[str], db_url: str, cwd: Path, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY"}}
    env.update(DATABASE_URL=db_url, PYTHONPATH=str(ROOT), EMBEDDING_MODEL="none")
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        input=answer,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


async def rows(engine, model=ChatMessage) -> int:
    async with engine.connect() as conn:
        return await conn.scalar(select(func.count()).select_from(model)) or 0


async def test_a_folder_is_imported_recursively_in_a_stable_order_and_counted_as_stored(db_url, engine, tmp_path):
    exports = tmp_path / "exports"
    (exports / "threads").mkdir(parents=True)
    said = [msg(ANA if i % 2 else BOB, f"lap {i} done", i) for i in range(11)]
    parts = JsonWriter(RUNNERS, GENERAL).write(exports / "Trail Runners - general.json", said, partition=1)
    [vault] = JsonWriter(RUNNERS, VAULT).write(
        exports / "threads" / "vault-talk.json",
        [msg(ANA, "the vault code is 31-41-59", 20), msg(HELPER, "beep", 21), msg(BOB, "", 22, type=dce.JOIN)],
    )
    (exports / "threads" / "notes.txt").write_text("not an export")

    first = run_cli(["import", str(exports)], db_url, tmp_path)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    # By path, numbers as numbers: "threads/…" before "Trail…" (case aside), part 2 before part 10, and a
    # partitioned export's first file (no number) first of its parts.
    assert [line.split(": #")[0] for line in lines[:12]] == [str(vault)] + [str(p) for p in parts]
    assert lines[1] == f"{parts[0]}: #general (Trail Runners): 1 stored, 0 duplicates, 0 skipped"
    assert lines[0] == (
        f"{vault}: #vault-talk (Trail Runners): 1 stored, 0 duplicates, 2 skipped (1 from bots, 1 system notice)"
    )
    assert lines[12:] == [
        f"Guild {RUNNERS.id} (Trail Runners): 12 messages stored, 0 duplicates, 2 skipped, from 12 files.",
        f"Next: python -m bot stats --guild {RUNNERS.id}",
    ]
    assert await rows(engine) == 12

    # The same folder again, named twice (and one of its files on its own): each file once, nothing new.
    again = run_cli(["import", str(exports), str(vault), str(exports)], db_url, tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(again.stdout.splitlines()) == 14
    assert f"Guild {RUNNERS.id} (Trail Runners): 0 messages stored, 12 duplicates, 2 skipped, from 12 files." in (
        again.stdout.splitlines()
    )
    assert await rows(engine) == 12


async def test_each_guild_is_named_with_its_next_command_and_refusals_are_counted_apart(db_url, engine, tmp_path):
    [runners] = JsonWriter(RUNNERS, GENERAL).write(tmp_path / "general.json", [msg(ANA, "kiwi run on saturday")])
    chess = tmp_path / "board.json"
    document = JsonWriter(CHESS, BOARD).document(
        [msg(BOB, "e4 opens"), msg(User(2**64, "impossible"), "said by nobody possible"), msg(ANA, "e5 answers")]
    )
    chess.write_text(json.dumps(document), encoding="utf-8")
    empty = tmp_path / "nothing here"
    empty.mkdir()

    result = run_cli(["import", str(runners), str(chess), str(empty)], db_url, tmp_path)
    assert result.returncode == 1, result.stderr  # the empty folder is reported as not imported
    assert f"Not imported: {empty}: is a folder with no .json exports in it" in result.stderr.splitlines()
    assert result.stdout.splitlines() == [
        f"{runners}: #general (Trail Runners): 1 stored, 0 duplicates, 0 skipped",
        f"{chess}: #board (Chess Club): 2 stored, 0 duplicates, 0 skipped, 1 refused (kept as dead letters)",
        f"Guild {RUNNERS.id} (Trail Runners): 1 message stored, 0 duplicates, 0 skipped, from 1 file.",
        f"Guild {CHESS.id} (Chess Club): 2 messages stored, 0 duplicates, 0 skipped, 1 refused (dead letters), "
        "from 1 file.",
        f"Next: python -m bot stats --guild {RUNNERS.id}",
        f"Next: python -m bot stats --guild {CHESS.id}",
    ]
    assert (await rows(engine), await rows(engine, DeadLetter)) == (3, 1)


async def test_messages_dated_at_the_ends_of_the_calendar_are_refused_and_their_author_can_still_be_forgotten(
    db_url, engine, tmp_path
):
    """0001-01-01 and 9999-12-31 are no Discord times: kept as dead letters, and `purge --user` takes everything."""
    ghost = User(2**60 + 8066, "quillon", "Quillon")
    said = [
        msg(ghost, "quillon marmalade before the calendar"),
        Msg(next(_ids), ghost, datetime(1, 1, 1, tzinfo=UTC), "quillon marmalade at year one"),
        Msg(next(_ids), ghost, datetime(9999, 12, 31, 23, 59, tzinfo=UTC), "quillon marmalade at the end of time"),
        msg(BOB, "bob stays", 1),
    ]
    [export] = JsonWriter(RUNNERS, GENERAL).write(tmp_path / "general.json", said)

    imported = run_cli(["import", str(export)], db_url, tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "2 stored, 0 duplicates, 0 skipped, 2 refused (kept as dead letters)" in imported.stdout
    async with engine.connect() as conn:
        reasons = (await conn.scalars(select(DeadLetter.reason).order_by(DeadLetter.reason))).all()
    assert [r.split(" is outside")[0] for r in reasons] == [
        "created at 0001-01-01T00:00:00+00:00",
        "created at 9999-12-31T23:59:00+00:00",
    ]

    purged = run_cli(["purge", "--guild", str(RUNNERS.id), "--user", str(ghost.id)], db_url, tmp_path, answer="y\n")
    assert purged.returncode == 0, purged.stderr
    assert "unstorable records" in purged.stdout  # the dead letters were counted, and asked about
    assert await tables_with(SimpleNamespace(engine=engine), ["marmalade", "quillon"], ghost.id) == []  # type: ignore[arg-type]
    assert await rows(engine) == 1  # bob's
