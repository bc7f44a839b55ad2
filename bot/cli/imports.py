"""`import`: DiscordChatExporter exports into memory, a line per file and per guild, then what to run next."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bot.cli.runner import async_command, command_settings, migrate_database, stopped_exit
from bot.lifecycle import StoppedError, StopRequest, unless_stopped

if TYPE_CHECKING:
    from bot.importer import ImportProgress, ImportSummary
    from bot.settings import Settings


@click.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--private", is_flag=True, help="The exported channels are ones @everyone cannot read.")
@async_command
async def import_(files: tuple[Path, ...], private: bool, stop: StopRequest) -> None:
    """Import DiscordChatExporter JSON exports: files, or folders of them (idempotent; a bad file stores nothing).

    Prints, per file and per guild, the messages stored, those already stored (duplicates) and those skipped,
    then the command that shows the guild.

    Private threads stay private; direct-message exports are skipped (Elefant keeps what is said in servers).
    Exports do not say whether a channel is private: pass --private for channels @everyone cannot read. Stopped
    (Ctrl-C, SIGTERM), it stores what it had read and says how far it got; running the same command again
    finishes the job. Exits 1 when a file or folder could not be imported, or when nothing was.
    """
    settings = command_settings()
    paths, unreadable = _readable(files)
    summary, stopped, failed = await _import_all(settings, paths, private=private, stop=stop)
    # Said after memory is closed: what was read is stored by then (or in a spill file, which the log names).
    for line in summary.lines():
        click.echo(line)
    if stopped is not None:
        stopped_exit(stop, _how_far(stopped, paths))
    if not summary.guilds and not failed + unreadable:
        click.echo("Nothing was imported.", err=True)
    if failed + unreadable or not summary.guilds:
        raise click.exceptions.Exit(1)


def _readable(files: tuple[Path, ...]) -> tuple[list[Path], int]:
    """The export files named (folders searched) and how many could not be read, each said; exit 1 if none can.

    Checked before seconds of imports and the database: a mistyped name is refused at once.
    """
    from bot.exports import export_files

    paths, refused = export_files(files)
    for sentence in refused:
        click.echo(f"Not imported: {sentence}", err=True)
    if not paths:
        raise click.exceptions.Exit(1)
    return paths, len(refused)


async def _import_all(
    settings: Settings, paths: list[Path], *, private: bool, stop: StopRequest
) -> tuple[ImportSummary, ImportProgress | None, int]:
    """Import the files in turn, a line for each: what was stored, the files that failed, how far a stop got."""
    from bot.app import open_app
    from bot.exports import DirectMessagesError, ImportFileError
    from bot.importer import ImportProgress, ImportSummary, describe, import_file

    await migrate_database(settings)
    summary, failed = ImportSummary(), 0
    async with open_app(settings) as app:
        for path in paths:
            tracking = ImportProgress(path)
            reading = import_file(
                app.memory,
                path,
                include_bots=settings.ingest_other_bots,
                progress=sys.stderr.isatty(),
                bot_name=settings.bot_name,
                private=private,
                tracking=tracking,
            )
            try:
                result = await unless_stopped(reading, stop)
            except StoppedError:
                return summary, tracking, failed
            except DirectMessagesError as exc:
                click.echo(f"Skipped: {exc}", err=True)
            except ImportFileError as exc:
                failed += 1
                click.echo(f"Not imported: {exc}", err=True)
            else:
                click.echo(describe(result))
                summary.add(result)
    return summary, None, failed


def _how_far(stopped: ImportProgress, paths: list[Path]) -> str:
    """What a stop left undone, and that running the command again finishes it."""
    left = len(paths) - paths.index(stopped.path) - 1
    later = f" ({left} later file{'s' if left != 1 else ''} not started)" if left else ""
    how_far = (
        f"after {stopped.done:,} of {stopped.total:,} messages of {stopped.path.name}"
        if stopped.total
        else f"before reading {stopped.path.name}"
    )
    return (
        f"Import stopped {how_far}{later}; run the same command again to finish (messages already stored are "
        "not duplicated)."
    )
