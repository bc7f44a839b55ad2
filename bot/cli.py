"""Command line: `python -m bot run | migrate | …`."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import discord

from bot.app import open_app, run_discord
from bot.console import run_console
from bot.importer import ImportFileError, import_file
from bot.logging_setup import configure_logging
from bot.memory.clock import FakeClock
from bot.settings import ConfigError, Settings, load_settings
from db.engine import create_engine
from db.migrate import upgrade


def _settings() -> Settings:
    try:
        settings = load_settings()
    except ConfigError as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)
    configure_logging(settings.log_level)
    return settings


def async_command(func: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    """Let a click command be an async function."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(func(*args, **kwargs))

    return wrapper


@click.group()
def main() -> None:
    """Elefant, a Discord bot with a long memory."""


async def _migrate(settings: Settings) -> None:
    engine = create_engine(settings.database_url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


@main.command()
@async_command
async def migrate() -> None:
    """Bring the database schema up to date."""
    await _migrate(_settings())
    click.echo("Database is up to date.")


@main.command()
@async_command
async def console() -> None:
    """Chat with the bot in a simulated guild in this terminal (or from a pipe)."""
    settings = _settings()
    await _migrate(settings)
    await run_console(settings)


@main.command()
@click.option("--guild", "guild_id", type=int, required=True, help="Guild (server) ID.")
@click.option("--user", "user_id", type=int, required=True, help="Member ID.")
@click.option("--at", "at", type=click.DateTime(formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]),
              default=None, help="Build the context as of this time (UTC unless an offset is given).")
@async_command
async def context(guild_id: int, user_id: int, at: datetime | None) -> None:
    """Print exactly what memory would inject for a member (at a given time)."""
    settings = _settings()
    await _migrate(settings)
    when = (at if at and at.tzinfo else (at or datetime.now(UTC)).replace(tzinfo=UTC)) if at else None
    clock = FakeClock(when) if when else None
    async with open_app(settings.model_copy(update={"memory_wait_seconds": 600}), clock=clock) as app:
        known = await app.memory.get_memories(guild_id, user_id, now=when)
    click.echo(known if known else f"(nothing is known about {user_id} in guild {guild_id})")


@main.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@async_command
async def import_(files: tuple[Path, ...]) -> None:
    """Import DiscordChatExporter JSON exports (idempotent; a bad file is reported and stores nothing)."""
    settings = _settings()
    await _migrate(settings)
    failed = 0
    async with open_app(settings) as app:
        for path in files:
            try:
                result = await import_file(app.memory, path, include_bots=settings.ingest_other_bots,
                                           progress=sys.stderr.isatty())
            except ImportFileError as exc:
                failed += 1
                click.echo(f"Not imported: {exc}", err=True)
                continue
            extra = f", {result.skipped_bots} from bots skipped" if result.skipped_bots else ""
            click.echo(f"{path}: {result.messages:,} messages from #{result.channel} ({result.guild}){extra}")
    if failed:
        sys.exit(1)


@main.command()
@async_command
async def run() -> None:
    """Run the bot (migrates the database first)."""
    settings = _settings()
    await _migrate(settings)
    if settings.discord_token is None:
        click.echo("No DISCORD_TOKEN is set: starting the console instead (see .env.example to connect).", err=True)
        await run_console(settings)
        return
    try:
        await run_discord(settings)
    except discord.LoginFailure:
        click.echo("Discord refused the token in DISCORD_TOKEN; reset it in the developer portal.", err=True)
        sys.exit(1)
