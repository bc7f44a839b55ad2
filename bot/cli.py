"""Command line: `python -m bot run | migrate | …`."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import click
import discord

from bot.app import run_discord
from bot.console import run_console
from bot.logging_setup import configure_logging
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
