"""Spans the CLI, bot/start_up.py and bot/discord_bot.py: the real `python -m bot` against what Discord answers.

Each wrong answer is one sentence on stderr and exit code 1.

The subprocess reaches tests/discord/fake_discord.py through tests/discord/shim/sitecustomize.py (discord.py's
API base and gateway URL, nothing else, are pointed at it).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from tests.children import die_with_parent
from tests.discord.fake_discord import APPLICATION_ID, GOOD_TOKEN, FakeDiscord

ROOT = Path(__file__).resolve().parents[2]
SHIM = Path(__file__).resolve().parent / "shim"
PORTAL = "https://discord.com/developers/applications"


@pytest.fixture
async def fake_discord():
    server = await FakeDiscord().start()
    yield server
    await server.stop()


def environment(tmp_path: Path, discord_url: str, **env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"DISCORD_TOKEN", "GEMINI_API_KEY", "DEV_GUILD_ID"}}
    clean.update(
        DATABASE_URL=f"sqlite:///{tmp_path}/bot.db",
        LOG_LEVEL="WARNING",  # the start-up's own INFO lines aside, stderr holds what a person must read
        PYTHONPATH=os.pathsep.join([str(SHIM), str(ROOT)]),
        ELEFANT_FAKE_DISCORD=discord_url,
        **env,
    )
    return clean


async def bot(tmp_path: Path, discord_url: str, *args: str, **env: str) -> tuple[int, list[str], str]:
    """Run `python -m bot ARGS` with a fresh SQLite database; (exit code, stderr lines, stdout)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent,
        cwd=tmp_path,
        env=environment(tmp_path, discord_url, **env),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=90)
    assert process.returncode is not None
    return process.returncode, err.decode().splitlines(), out.decode()


async def test_a_wrong_token_is_one_sentence(tmp_path, fake_discord):
    code, stderr, _ = await bot(tmp_path, fake_discord.url, "run", DISCORD_TOKEN="MTIz.wrong.token")
    assert code == 1
    assert stderr == [
        "Discord refused the token in DISCORD_TOKEN: copy it again from the developer portal "
        f"({PORTAL} → your application → Bot → Reset Token)."
    ]


@pytest.mark.parametrize("members", [False, True])
async def test_a_privileged_intent_switched_off_is_one_sentence_naming_the_switch(tmp_path, fake_discord, members):
    code, stderr, _ = await bot(
        tmp_path,
        fake_discord.url,
        "run",
        DISCORD_TOKEN=GOOD_TOKEN,
        DISCORD_MEMBERS_INTENT=str(members).lower(),
    )
    assert code == 1
    switches = "“Message Content Intent” and “Server Members Intent”" if members else "“Message Content Intent”"
    assert stderr == [
        f"Discord refused the connection because a privileged intent is switched off: turn on {switches} in the "
        f"developer portal ({PORTAL} → your application → Bot → Privileged Gateway Intents)"
        + (" (or set DISCORD_MEMBERS_INTENT=false)." if members else ".")
    ]
    [identify] = fake_discord.identified
    assert identify["intents"] == (1 << 0) | (1 << 9) | (1 << 15) | ((1 << 1) if members else 0)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_no_network_is_one_sentence(tmp_path):
    code, stderr, _ = await bot(tmp_path, f"http://127.0.0.1:{closed_port()}", "run", DISCORD_TOKEN=GOOD_TOKEN)
    assert code == 1
    assert stderr == [
        "Cannot reach Discord (127.0.0.1): check this machine's network connection, DNS, firewall or proxy, "
        "then start again."
    ]


async def test_sync_sends_the_tree_even_when_unchanged(tmp_path, fake_discord):
    code, stderr, out = await bot(tmp_path, fake_discord.url, "sync", DISCORD_TOKEN=GOOD_TOKEN)
    assert (code, stderr, out) == (0, [], "Slash commands synced globally.\n")
    code, _, _ = await bot(tmp_path, fake_discord.url, "sync", DISCORD_TOKEN=GOOD_TOKEN)
    assert code == 0 and len(fake_discord.synced) == 2  # `sync` always sends
    assert all(path == f"/api/v10/applications/{APPLICATION_ID}/commands" for path, _ in fake_discord.synced)
    assert (tmp_path / "data" / "command-tree.sha256").is_file()


async def test_sync_without_a_token_says_what_it_needs(tmp_path, fake_discord):
    code, stderr, _ = await bot(tmp_path, fake_discord.url, "sync")
    assert code == 1 and stderr == [
        f"`sync` needs DISCORD_TOKEN (the bot's token from {PORTAL} → your application → Bot)."
    ]


async def test_run_connects_syncs_only_a_changed_tree_and_stops_cleanly_on_sigterm(tmp_path, fake_discord):
    fake_discord.privileged_intents = True
    for expected_syncs in (1, 1):  # the second start finds the tree unchanged
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "run",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent,
            cwd=tmp_path,
            env=environment(tmp_path, fake_discord.url, DISCORD_TOKEN=GOOD_TOKEN),
        )
        identified = len(fake_discord.identified)
        for _ in range(600):
            if len(fake_discord.identified) > identified or process.returncode is not None:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # READY is on its way
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), timeout=60)
        assert process.returncode == 0, err.decode()
        assert err.decode() == ""
        assert len(fake_discord.synced) == expected_syncs


@pytest.mark.parametrize("command", ["sync", "run"])
async def test_a_dev_guild_the_bot_is_not_in_is_one_sentence_naming_the_setting(tmp_path, fake_discord, command):
    fake_discord.privileged_intents = True
    guild = 2**60 + 4242
    fake_discord.foreign_guilds = {guild}
    code, stderr, _ = await bot(tmp_path, fake_discord.url, command, DISCORD_TOKEN=GOOD_TOKEN, DEV_GUILD_ID=str(guild))
    assert code == 1
    assert stderr == [
        f"Discord refused the slash commands for DEV_GUILD_ID={guild} (Missing Access): add the bot to that server "
        "with the link `python -m bot invite` prints, or correct or unset DEV_GUILD_ID."
    ]


async def test_invite_with_a_token_that_is_not_one_says_so(tmp_path, fake_discord):
    code, stderr, out = await bot(tmp_path, fake_discord.url, "invite", DISCORD_TOKEN="not-a-token")
    assert (code, out) == (2, "")
    assert stderr[-1] == (
        "Error: DISCORD_TOKEN does not look like a bot token (it starts with the bot's id); copy it again from the "
        "developer portal, or pass --client-id (the Application ID on its General Information page)"
    )
