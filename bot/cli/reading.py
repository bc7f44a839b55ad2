"""Commands that show what memory holds for a guild: context, recall, stats, export."""

from __future__ import annotations

from datetime import datetime

import click

from bot.cli.params import AT_OPTION, GUILD_OPTION, Snowflake
from bot.cli.runner import async_command, command_settings, guild_app
from bot.invocation import command_name

USER_OPTION = click.option("--user", "user_id", type=Snowflake(), required=True, help="Member ID.")


@click.command()
@GUILD_OPTION
@USER_OPTION
@AT_OPTION
@async_command
async def context(guild_id: int, user_id: int, at: datetime | None) -> None:
    """Print exactly what memory would inject for a member (at a given time)."""
    settings = command_settings()
    from bot.memory.clock import FakeClock

    patient = settings.model_copy(update={"memory_wait_seconds": 600})
    async with guild_app(patient, guild_id, clock=FakeClock(at) if at else None) as app:
        known = await app.memory.recollection.context(guild_id, user_id, now=at)
        if not known:
            last = await app.memory.admin.last_message_at(guild_id, user_id)
    if known:
        click.echo(known)
        return
    # Memory covers the last week; an imported export is usually older, so say where to look.
    hint = f"; their last stored message is from {last:%Y-%m-%d}: try --at {last:%Y-%m-%dT%H:%M:%S}" if last else ""
    click.echo(f"(nothing is known about {user_id} in guild {guild_id} at that time{hint})")


@click.command()
@GUILD_OPTION
@click.option(
    "--channel",
    "channel_id",
    type=Snowflake(),
    default=None,
    help="Channel it is asked in (its own private talk is visible there); default: a public one.",
)
@click.option("--as", "asker", type=Snowflake(), default=None, help="Member asking (their facts come first).")
@AT_OPTION
@click.argument("question")
@async_command
async def recall(guild_id: int, channel_id: int | None, asker: int | None, at: datetime | None, question: str) -> None:
    """Print exactly what the model would receive from memory for QUESTION, as a reply sends it (with --at, as at
    that moment: nothing said after it)."""
    settings = command_settings()
    from bot.memory.assembly import Asked
    from bot.memory.clock import ReplayClock
    from bot.reply.routing import address

    # Patient, as `prompt` is: what a reply receives once memory is ready. At a past moment, as then: nothing said
    # (or remembered, or summarised) after it.
    patient = settings.model_copy(update={"memory_wait_seconds": 600})
    text = address(question, bot_user_id=0, bot_name=settings.bot_name, replied_to_bot=False) or question
    async with guild_app(patient, guild_id, clock=ReplayClock(at) if at else None) as app:
        await app.memory.recollection.vectors_ready(guild_id)  # one question: worth waiting for the model and the index
        remembered = await app.memory.recollection.for_reply(Asked(guild_id, asker or 0, text, channel_id=channel_id))
        waiting = await app.memory.admin.unembedded_count()
    click.echo(remembered.text or "(nothing found)")
    if waiting:
        click.echo(
            f"({waiting:,} stored messages are not embedded yet, so only their words are searched; "
            f"`{command_name()} embed` embeds them now)",
            err=True,
        )


@click.command()
@GUILD_OPTION
@async_command
async def stats(guild_id: int) -> None:
    """What is stored for a guild, and what the model cost in the last 24 hours."""
    async with guild_app(command_settings(), guild_id) as app:
        figures = await app.memory.admin.stats(guild_id)
    for name, value in figures.items():
        click.echo(f"{name.replace('_', ' '):24} {value:,}")


@click.command()
@GUILD_OPTION
@USER_OPTION
@async_command
async def export(guild_id: int, user_id: int) -> None:
    """Print a member's facts, revisions and summaries as Markdown."""
    async with guild_app(command_settings(), guild_id) as app:
        click.echo(await app.memory.admin.export(guild_id, user_id), nl=False)
