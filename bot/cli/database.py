"""Commands that change the database by hand: migrate its schema, embed its messages, purge a guild's data."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import click

from bot.cli.params import GUILD_OPTION, IsoDateTime, Snowflake
from bot.cli.runner import async_command, command_settings, guild_app, migrate_database


@click.command()
@async_command
async def migrate() -> None:
    """Bring the database schema up to date."""
    await migrate_database(command_settings())
    click.echo("Database is up to date.")


@click.command()
@async_command
async def embed() -> None:
    """Embed every stored message that has no vector yet (what the bot otherwise does in the background)."""
    settings = command_settings()
    from tqdm import tqdm

    from bot.app import open_app

    await migrate_database(settings)
    async with open_app(settings) as app:
        total = await app.memory.admin.unembedded_count()
        if app.memory.embedding is None:
            click.echo("No embedding model is configured (EMBEDDING_MODEL); recall uses words only.", err=True)
            raise click.exceptions.Exit(1)
        with tqdm(total=total, unit="msg", disable=not sys.stderr.isatty()) as bar:
            app.memory.embedding.start()
            done = 0
            while (left := await app.memory.admin.unembedded_count()) > 0:
                bar.update(total - left - done)
                done = total - left
                await asyncio.sleep(1)
            await app.memory.embedding.idle()
    click.echo(f"Embedded {total:,} messages.")


@click.command()
@GUILD_OPTION
@click.option("--user", "user_id", type=Snowflake(), help="Delete everything about this member.")
@click.option("--channel", "channel_id", type=Snowflake(), help="Delete this channel's messages.")
@click.option(
    "--before", type=IsoDateTime(), help="Delete messages before this moment, e.g. 2026-11-22 (UTC unless an offset)."
)
@click.option("--all", "everything", is_flag=True, help="Delete everything kept about the guild.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def purge(
    *, guild_id: int, user_id: int | None, channel_id: int | None, before: datetime | None, everything: bool, yes: bool
) -> None:
    """Delete data for real: from every table and cache (summaries built on it included)."""
    chosen = [x for x in (user_id, channel_id, before, everything or None) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError("choose exactly one of --user, --channel, --before, --all")
    target = {"guild_id": guild_id, "user_id": user_id, "channel_id": channel_id, "before": before}
    # Asked between two runs of the event loop: Ctrl-C at this prompt simply aborts, nothing has begun.
    if not yes:
        question = _purge_question(**target)
        if question is None:
            return
        click.confirm(question, abort=True)
    _purge(**target)


def _purge_target(user_id: int | None, channel_id: int | None, before: datetime | None, name: str | None) -> str:
    if user_id is not None:
        return f"everything about member {user_id}" + (f" ({name})" if name else "")
    if channel_id is not None:
        return f"the messages of channel {channel_id}"
    if before is not None:
        return f"the messages before {before.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    return "everything the guild said (its channel rules, opt-outs and time zone stay)"


@async_command
async def _purge_question(
    *, guild_id: int, user_id: int | None, channel_id: int | None, before: datetime | None
) -> str | None:
    """The confirmation question, with the rows the purge would delete counted; None when nothing matches."""
    from bot.memory.admin import rows_in_words

    async with guild_app(command_settings(), guild_id) as app, _storage_sentence():
        counts = await app.memory.admin.purge(
            guild_id, user_id=user_id, channel_id=channel_id, before=before, preview=True
        )
        names = await app.memory.directory.display_names(guild_id, {user_id}) if user_id is not None else {}
    target = _purge_target(user_id, channel_id, before, names.get(user_id or 0))
    if not any(counts.values()):
        click.echo(f"Nothing to delete: guild {guild_id} keeps nothing of {target}.")
        return None
    return f"From guild {guild_id}, delete {target}: {rows_in_words(counts)}? This cannot be undone"


@async_command
async def _purge(*, guild_id: int, user_id: int | None, channel_id: int | None, before: datetime | None) -> None:
    from bot.memory.admin import rows_in_words

    async with guild_app(command_settings(), guild_id) as app, _storage_sentence():
        counts = await app.memory.admin.purge(guild_id, user_id=user_id, channel_id=channel_id, before=before)
    click.echo(f"Deleted: {rows_in_words(counts)}.")


@contextlib.asynccontextmanager
async def _storage_sentence() -> AsyncIterator[None]:
    """A database that stayed busy (after the deletion's own retries) or went away ends the command with one sentence
    and exit code 1, never the driver's error: SQLAlchemy's text carries the statement's parameters (ids)."""
    from bot.faults import describe, storage_trouble
    from bot.start_up import fail

    try:
        yield
    except Exception as exc:
        if not storage_trouble(exc):
            raise
        fail(
            f"Nothing was deleted: the database was busy or away ({describe(exc).split(':')[0]}); run the command "
            "again in a moment.",
            exc,
        )
