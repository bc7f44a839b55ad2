"""Commands that run the bot or prepare it for Discord: run, console, sync, invite."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from bot.cli.params import AT_OPTION, Snowflake
from bot.cli.runner import async_command, command_settings, migrate_database
from bot.lifecycle import StopRequest
from bot.start_up import PORTAL, discord_start_up, fail

if TYPE_CHECKING:
    from bot.settings import Settings


@click.command()
@async_command
async def run(stop: StopRequest) -> None:
    """Run the bot (migrates the database first; syncs slash commands when they changed)."""
    settings = command_settings(long_running=True)
    from bot.app import run_discord
    from bot.console import run_console
    from bot.llm.probe import check_models
    from bot.settings import ConfigError

    await migrate_database(settings)
    try:
        await check_models(settings)  # a refused key stops here; a retired model id or no network warns
    except ConfigError as exc:
        fail(str(exc), exc)
    if settings.discord_token is None:
        click.echo("No DISCORD_TOKEN is set: starting the console instead (see .env.example to connect).", err=True)
        await run_console(settings, stop=stop)
        return
    with discord_start_up(settings):
        await run_discord(settings, stop=stop)


@click.command()
@AT_OPTION
@async_command
async def console(at: datetime | None, stop: StopRequest) -> None:
    """Chat with the bot in a simulated guild in this terminal (or from a pipe), its clock starting --at (default
    now), or just after the newest line an earlier session stored, if that is later."""
    settings = command_settings(long_running=True)
    from bot.console import run_console

    await migrate_database(settings)
    await run_console(settings, start=at, stop=stop)


@click.command()
@async_command
async def sync() -> None:
    """Send the slash commands to Discord now (`run` sends them only when they changed)."""
    settings = command_settings()
    token = _token(settings, "sync")  # refused before seconds of imports
    from bot.app import open_app
    from bot.discord_bot import ElefantBot

    await migrate_database(settings)
    with discord_start_up(settings):
        async with open_app(settings) as app:
            bot = ElefantBot(memory=app.memory, responder=app.responder, settings=settings, sync_commands=False)
            async with bot:
                await bot.login(token)  # no gateway connection: syncing is an HTTP call
                await bot.sync_commands(force=True)
    where = f"to guild {settings.dev_guild_id}" if settings.dev_guild_id else "globally"
    click.echo(f"Slash commands synced {where}.")


def _token(settings: Settings, command: str) -> str:
    if settings.discord_token is None:
        fail(f"`{command}` needs DISCORD_TOKEN (the bot's token from {PORTAL} → your application → Bot).")
    return settings.discord_token.get_secret_value()


@click.command()
@click.option("--client-id", type=Snowflake(), help="The Application ID (default: read from DISCORD_TOKEN).")
def invite(client_id: int | None) -> None:
    """Print the link that adds the bot to a server, with the scopes and permissions it needs."""
    settings = command_settings()
    from bot.invite import PERMISSIONS, SCOPES, application_id_from_token, invite_url

    if client_id is None and settings.discord_token is not None:
        client_id = application_id_from_token(settings.discord_token.get_secret_value())
        if client_id is None:
            raise click.UsageError(
                "DISCORD_TOKEN does not look like a bot token (it starts with the bot's id); copy it again from the "
                "developer portal, or pass --client-id (the Application ID on its General Information page)"
            )
    if client_id is None:
        raise click.UsageError(
            "pass --client-id (the Application ID on the developer portal's General Information page) "
            "or set DISCORD_TOKEN"
        )
    click.echo(invite_url(client_id))
    click.echo(f"Scopes: {', '.join(SCOPES)}. Permissions: {', '.join(PERMISSIONS.values())}.", err=True)
