"""Console mode from a pipe, offline: remember → what do you know → forget, as a newcomer would try it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.children import die_with_parent

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """\
Elefant, remember that I like green tea
Elefant, what do you know about me?
/as bob
@elefant remember that @alice is vegetarian
/as alice
Elefant, forget that I like green tea
/context alice
/stats
"""


def run(args: list[str], tmp_path: Path, stdin: str, *, embedding: str = "none") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY"}}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path}/console.db"
    env["EMBEDDING_MODEL"] = embedding  # "none" unless the test is about the model: loading it slows them down
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )


def test_scripted_console_session_offline(tmp_path):
    # A fixed start: the clock moves 30 s a line, and crossing an hour would legitimately refresh the summary.
    result = run(["console", "--at", "2026-03-02T10:00:00"], tmp_path, SCRIPT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "[1] alice: Elefant, remember that I like green tea",
        "[2] Elefant: Got it. What I know about alice now:",
        "alice likes green tea.",
        "[3] alice: Elefant, what do you know about me?",
    ]
    # Forgetting reaches what repeated it: the request, the bot's confirmations (and the facts' history).
    forgot = "[8] Elefant: Done, I forgot that. I also removed it from 5 stored messages and summaries that said it."
    assert f"{forgot} What I still know about alice: alice is vegetarian." in lines
    # /context alice: the facts alone; everything alice said today was said to the bot, which is no news of her day.
    assert lines[-2] == "alice is vegetarian."
    assert lines[-1].startswith("(messages 3, people with facts 1,") and "offline provider" in lines[-1]
    assert "alice>" not in result.stdout  # no prompt decorations from a pipe


KITTEN = """\
I adopted a kitten named Pixel
/day +2
Elefant, what did I say about my new pet?
Elefant, what did I say about my new pet?
/as bob
Elefant, what did alice say about her pet?
/context alice
"""


def test_the_bots_conversation_is_not_its_evidence(tmp_path):
    """As a new user tried it (offline, the default local embedder): a question about the past is answered with
    what was said, at the first asking and the second; no answer cites a question to the bot (the first question
    used to be the second one's answer), and no summary holds one."""
    result = run(["console", "--at", "2026-03-02T10:00:00"], tmp_path, KITTEN, embedding="local")
    assert result.returncode == 0, result.stderr
    answers: list[list[str]] = []
    for line in result.stdout.splitlines():
        if line.startswith("[") and "] Elefant: " in line:
            answers.append([line])
        elif line.startswith("• ") and answers:
            answers[-1].append(line)
    assert len(answers) == 3, result.stdout
    for answer in answers:
        assert answer[0].endswith("Elefant: Here is what I found:"), result.stdout
        assert "alice: “I adopted a kitten named Pixel”" in answer[1], result.stdout
        assert not any("what did" in cited for cited in answer[1:]), result.stdout
    context = [line for line in result.stdout.splitlines() if not line.startswith(("[", "• ", "("))]
    assert context == ['Last week: On 2026-03-02: alice wrote 1 message: "I adopted a kitten named Pixel"']


def test_moving_the_clock_too_far_is_refused_and_the_session_goes_on(tmp_path):
    script = "/day +99999999\n/wait 9999999999d\n/day +2\nI adopted a kitten named Pixel\n"
    result = run(["console", "--at", "2026-03-02T10:00:00"], tmp_path, script)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    refused = "(the clock moves at most 3,650 days at once; it is still Monday 2026-03-02 10:00 UTC)"
    assert lines[:3] == [refused, refused, "(it is now Wednesday 2026-03-04 10:00 UTC)"], result.stdout
    assert "[1] alice: I adopted a kitten named Pixel" in lines


def test_run_without_a_token_lands_in_the_console(tmp_path):
    result = run(["run"], tmp_path, "Elefant, remember that I like tea\n")
    assert result.returncode == 0, result.stderr
    assert "starting the console" in result.stderr
    assert "[2] Elefant: Got it. What I know about alice now:" in result.stdout


def test_context_prints_what_would_be_injected(tmp_path):
    from bot.console import GUILD, member_id

    run(["console"], tmp_path, "Elefant, remember that I like green tea\n")
    result = run(["context", "--guild", str(GUILD), "--user", str(member_id("alice"))], tmp_path, "")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "alice likes green tea."
    nobody = run(["context", "--guild", str(GUILD), "--user", "42"], tmp_path, "")
    assert nobody.stdout.strip() == f"(nothing is known about 42 in guild {GUILD} at that time)"


def test_import_then_context_for_an_imported_member(tmp_path):
    from tests.export_files import AUTHORS, GUILD_ID, write_export

    export = write_export(tmp_path / "general.json", 200)
    imported = run(["import", str(export)], tmp_path, "")
    assert imported.returncode == 0, imported.stderr
    assert (
        imported.stdout.splitlines()[0]
        == f"{export}: #general (Test Guild): 180 stored, 0 duplicates, 20 skipped (20 from bots)"
    )
    now = run(["context", "--guild", str(GUILD_ID), "--user", str(AUTHORS[0][0])], tmp_path, "")
    assert "their last stored message is from 2025-03-01: try --at 2025-03-01T12:18:00" in now.stdout  # old export
    result = run(
        ["context", "--guild", str(GUILD_ID), "--user", str(AUTHORS[0][0]), "--at", "2025-03-02T12:00:00"], tmp_path, ""
    )
    assert result.returncode == 0, result.stderr
    assert "2025-03-01" in result.stdout and "Ana wrote" in result.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    failed = run(["import", str(bad)], tmp_path, "")
    assert failed.returncode == 1 and f"Not imported: {bad}: is not a DiscordChatExporter JSON export" in failed.stderr


def test_stats_export_and_purge_from_the_command_line(tmp_path):
    from bot.console import GUILD, member_id

    run(["console"], tmp_path, "Elefant, remember that I like green tea\nhello there\n")
    alice = str(member_id("alice"))
    stats = run(["stats", "--guild", str(GUILD)], tmp_path, "")
    assert stats.returncode == 0, stats.stderr
    assert "messages                 3" in stats.stdout and "members with facts       1" in stats.stdout
    exported = run(["export", "--guild", str(GUILD), "--user", alice], tmp_path, "")
    assert exported.stdout.startswith("# What Elefant keeps about alice")
    assert "alice likes green tea." in exported.stdout and "#1 " in exported.stdout
    refused = run(["purge", "--guild", str(GUILD), "--user", alice], tmp_path, "n\n")
    assert refused.returncode == 1 and "Aborted" in refused.stderr
    purged = run(["purge", "--guild", str(GUILD), "--user", alice, "--yes"], tmp_path, "")
    assert purged.returncode == 0, purged.stderr
    # Her two messages, the bot's reply built on her facts, the facts and their history.
    assert purged.stdout.startswith("Deleted: 2 messages, 1 replies of mine built on them, 1 facts entries, 1 fact")
    after = run(["context", "--guild", str(GUILD), "--user", alice], tmp_path, "")
    assert after.stdout.startswith("(nothing is known about")
    both = run(["purge", "--guild", str(GUILD), "--user", alice, "--all", "--yes"], tmp_path, "")
    assert both.returncode == 2 and "exactly one" in both.stderr


def test_nothing_typed_is_dropped_as_a_duplicate_across_runs(tmp_path):
    # Both runs start their simulated clock at the same instant, as `--at` (or a quick restart) makes them:
    # only the message ids tell the runs' lines apart, and a reused id would silently swallow the new line.
    script = "hello there\nsecond line\n/stats\n"
    counts = []
    for _ in range(3):
        result = run(["console", "--at", "2026-03-02T10:00:00"], tmp_path, script)
        assert result.returncode == 0, result.stderr
        counts.append(result.stdout.splitlines()[-1].split(",")[0])
    assert counts == ["(messages 2", "(messages 4", "(messages 6"]


def test_remember_this_in_reply_to_the_bot_stores_no_fact_about_the_bot(tmp_path):
    from bot.console import BOT_ID, GUILD
    from bot.reply.respond import NOT_ABOUT_ME

    script = "\n".join(
        [
            "Elefant, hello there",  # [1] alice, [2] the bot's answer
            "/reply 2",
            "Elefant, remember this",  # [3], [4]
            "/reply 2",
            "remember this",  # [5], [6]: a reply to the bot is addressed to it without its name
            "Elefant, remember that @elefant loves peanuts",  # [7], [8]
            "/stats",
        ]
    )
    result = run(["console", "--at", "2026-03-02T10:00:00"], tmp_path, script + "\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    answers = [line for line in lines if line.startswith(("[4] ", "[6] ", "[8] "))]
    assert answers == [f"[{n}] Elefant: {NOT_ABOUT_ME}" for n in (4, 6, 8)], result.stdout
    assert lines[-1].startswith("(messages ") and "people with facts 0," in lines[-1]
    about_bot = run(["context", "--guild", str(GUILD), "--user", str(BOT_ID)], tmp_path, "")
    assert about_bot.stdout.startswith(f"(nothing is known about {BOT_ID}")


async def test_the_models_mentions_are_shown_as_names_and_its_mass_pings_inert(tmp_path, monkeypatch):
    import io

    from bot.cli.runner import migrate_database
    from bot.console import BOT_ID, member_id, run_console
    from bot.reply.deadline import Answer, ReplyDeadline
    from bot.reply.routing import Route
    from bot.settings import Settings

    said = f"@everyone and @here: <@{member_id('alice')}> asked <@{BOT_ID}>"

    async def respond_within(self: ReplyDeadline, request: object, **_: object) -> Answer:
        return Answer(said, Route.CHAT)  # what a model may write

    monkeypatch.setattr(ReplyDeadline, "respond_within", respond_within)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=f"sqlite:///{tmp_path}/console.db",
        embedding_model="none",
        gemini_api_key=None,
        discord_token=None,
    )
    await migrate_database(settings)
    out = io.StringIO()
    await run_console(settings, stdin=io.StringIO("Elefant, hello\n"), out=out)
    assert out.getvalue().splitlines()[1] == "[2] Elefant: @\u200beveryone and @\u200bhere: @alice asked @Elefant"


async def test_an_answer_is_shown_while_its_reply_is_still_under_way(tmp_path, monkeypatch):
    """What waits for the gap after a reply (a full collection, bot/collector.py) runs once the answer is shown."""
    import io

    from bot.cli.runner import migrate_database
    from bot.console import run_console
    from bot.memory.recall.embedding import Replies
    from bot.reply.deadline import Answer, ReplyDeadline
    from bot.reply.routing import Route
    from bot.settings import Settings

    async def respond_within(self: ReplyDeadline, request: object, **_: object) -> Answer:
        return Answer("hello to you", Route.CHAT)

    made: list[Replies] = []
    init = Replies.__init__

    def keep(self: Replies) -> None:
        init(self)
        made.append(self)

    monkeypatch.setattr(ReplyDeadline, "respond_within", respond_within)
    monkeypatch.setattr(Replies, "__init__", keep)
    under_way: list[bool] = []

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            if "Elefant: hello to you" in text:
                under_way.append(any(r._under_way for r in made))
            return super().write(text)

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path}/console.db", embedding_model="none",
        gemini_api_key=None, discord_token=None,
    )  # fmt: skip
    await migrate_database(settings)
    await run_console(settings, stdin=io.StringIO("Elefant, hello\n"), out=Out())
    assert under_way == [True]


def test_a_second_session_continues_after_the_first_sessions_clock(db_url, tmp_path):
    """The first session ran days ahead of the real clock; the second starts after its lines, not at real time, so
    they are its past (on both databases)."""
    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY"}}
    env |= {"DATABASE_URL": db_url, "EMBEDDING_MODEL": "none", "PYTHONPATH": str(ROOT)}

    def console(*args: str, stdin: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-m", "bot", "console", *args],
            input=stdin, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    # --at takes no more than a day ahead of now; `/day +3` then runs the first session days ahead of it.
    start = datetime.now(UTC).replace(hour=10, minute=0, second=0, microsecond=0)
    ahead = start + timedelta(days=3)
    first = console("--at", f"{start:%Y-%m-%dT%H:%M:%S}", stdin="/day +3\nI adopted a kitten named Pixel\n")
    assert first[0] == f"(it is now {ahead:%A %Y-%m-%d} 10:00 UTC)"
    second = console(stdin="/day 0\nElefant, what did I say about my kitten?\n")
    assert second[0] == f"(it is now {ahead:%A %Y-%m-%d} 10:01 UTC)"  # a minute after the newest line, not today
    assert second[2].startswith("[2] Elefant: Here is what I found:")
    assert second[3].startswith(f"• {ahead:%Y-%m-%d}, today — alice: “I adopted a kitten named Pixel”")


MODEL_SCRIPT = """\
Elefant, remember that I like green tea
I adopted a kitten named Pixel
/stats
/day +2
Elefant, what did I say about my kitten?
Elefant, how are you?
Elefant, forget that I like green tea
Elefant, what do you know about me?
"""


@pytest.mark.parametrize("api", ["openai", "gemini"])
async def test_make_run_against_a_model_remembers_recalls_chats_and_forgets(tmp_path, api):
    """`make run` pointed at a stub model server with the scripted model's wording: `LLM_PROVIDER=openai` at the
    chat-completions stub (`python -m fakes.openai_stub`), and Gemini at its stub. The start-up look passes quietly,
    and every route goes through the model."""
    import asyncio

    from fakes.gemini_stub import GeminiStub
    from fakes.model_doubles import scripted_model
    from fakes.openai_stub import OpenAIStub
    from tests.llm.test_probe import PROVIDER_SETTINGS

    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_SETTINGS}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path}/console.db", "EMBEDDING_MODEL": "none", "LOG_LEVEL": "WARNING"}
    stub: OpenAIStub | GeminiStub
    if api == "openai":
        stub = await OpenAIStub(responder=scripted_model, models={"stub-model"}).start()
        env |= {"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": stub.base_url, "OPENAI_MODEL_FAST": "stub-model"}
        model = f"stub-model at {stub.base_url}"
    else:
        stub = await GeminiStub(responder=scripted_model).start()
        env |= {"GEMINI_API_KEY": "test-key", "GEMINI_BASE_URL": stub.base_url}
        model = "Gemini"
    try:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "bot", "run"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent,
            cwd=tmp_path,
            env={**env, "PYTHONPATH": str(ROOT)},
        )
        out, err = await asyncio.wait_for(process.communicate(MODEL_SCRIPT.encode()), timeout=120)
    finally:
        await stub.stop()
    assert process.returncode == 0, err.decode()
    assert err.decode().splitlines() == [
        "No DISCORD_TOKEN is set: starting the console instead (see .env.example to connect)."
    ]
    said = out.decode()
    lines = said.splitlines()
    assert lines[1:3] == ["[2] Elefant: Got it. What I know about alice now:", "alice likes green tea."]
    [stats] = [line for line in lines if line.startswith("(messages ")]
    assert stats.endswith(f"LLM calls 1; model: {model})")  # the remember, counted
    recalled = said.index("Elefant: (stub model) you said: what did I say about my kitten?")
    assert "alice: “I adopted a kitten named Pixel”" in said[recalled:]  # the past, cited
    assert "Elefant: (stub model) you said: how are you?" in said  # chat
    assert "Elefant: Done, I forgot that." in said  # forget: structured output through the model
    about = said[said.index("Elefant: What I know about alice:") :]
    assert "green tea" not in about and "kitten named Pixel" in about
    if isinstance(stub, OpenAIStub):
        assert {r.model for r in stub.requests} == {"stub-model"}
        assert {r.format_type for r in stub.requests} == {None, "json_schema"}  # the probe's question and forget


MISSED_A_DAY = """\
/as bob
the pizza order from last night was cold
/as cy
cold pizza again? we should switch pizza places
/as ana
morning all, off to work, back tonight
/wait 1h
/as bob
who's in for the chess tournament on saturday? we need eight players
/as cy
me! double elimination bracket please
/as bob
decided: the tournament starts saturday at ten
/wait 2h
/in events
/as cy
the bake sale moved to sunday, bring cookies
/as dee
I'll bake lemon cookies for the bake sale
/wait 2h
/in general
heads up: the server migration is tonight, expect downtime
/as bob
how long is the migration downtime?
/wait 3h
/as ana
hi all, I'm back
Elefant, what did I miss?
"""


def _recap_shown(stdout: str, database: Path) -> tuple[str, set[str], dict[str, str]]:
    """The recap as the console printed it, the links in it, and each stored message's link by its words."""
    import re
    import sqlite3

    from bot.console import GUILD

    printed = stdout.split("] Elefant: ", 1)[1]
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT message_text, channel_id, message_id FROM chat_history").fetchall()
    links = {text: f"https://discord.com/channels/{GUILD}/{c}/{m}" for text, c, m in rows}
    return printed, set(re.findall(r"<(https://discord\.com/channels/[\d/]+)>", printed)), links


def test_what_did_i_miss_after_a_day_away_offline(tmp_path):
    result = run(["console", "--at", "2026-03-02T09:00:00"], tmp_path, MISSED_A_DAY)
    assert result.returncode == 0, result.stderr
    recap, linked, links = _recap_shown(result.stdout, tmp_path / "console.db")
    # Since ana's "morning all" (the clock moves 30 s a line): the three threads begun after she left, by name.
    assert recap.startswith("Recap of the server since you last spoke in the server (Mon 09:01)")
    for title in ("tournament", "bake", "migration"):
        assert title in recap
    assert "pizza" not in recap  # before she left
    assert "#events" in recap  # channels by name, as a member would see them
    openers = (
        "who's in for the chess tournament on saturday? we need eight players",
        "the bake sale moved to sunday, bring cookies",
        "heads up: the server migration is tonight, expect downtime",
    )
    assert {links[text] for text in openers} <= linked
    assert links["the pizza order from last night was cold"] not in linked


async def test_what_did_i_miss_after_a_day_away_with_the_model(tmp_path, stub):
    """The same day with the Gemini stub's scripted model: its recap, its refs turned into the messages' links."""
    import asyncio

    env = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN"}}
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path}/console.db",
        "GEMINI_API_KEY": "test-key",
        "GEMINI_BASE_URL": stub.base_url,
        "EMBEDDING_MODEL": "none",
        "PYTHONPATH": str(ROOT),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "console", "--at", "2026-03-02T09:00:00",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent, cwd=tmp_path, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(MISSED_A_DAY.encode()), timeout=120)
    assert process.returncode == 0, err.decode()
    recap, linked, links = _recap_shown(out.decode(), tmp_path / "console.db")
    assert recap.startswith("Recap of the server since you last spoke in the server (Mon 09:01)")
    assert "(stub model) bob opened it: who's in for the chess tournament" in recap
    assert "(stub model) cy opened it: the bake sale moved to sunday" in recap
    assert "(stub model) dee opened it: heads up: the server migration" in recap
    assert links["who's in for the chess tournament on saturday? we need eight players"] in linked
    assert "pizza" not in recap
    assert len([r for r in stub.requests if "<threads>" in r.prompt_text]) == 1  # one model call
