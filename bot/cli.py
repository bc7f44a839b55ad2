"""Command line: `python -m bot run | migrate | …` (installed as `elefant`).

Nothing heavy is imported at module level: `--help` must answer at once, so each command imports what it runs
on (SQLAlchemy, Alembic, discord.py, google-genai) itself, after reading the settings — a wrong setting is
answered before seconds of imports.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from bot.lifecycle import StoppedError, StopRequest, stop_on_signals, unless_stopped
from bot.logging_setup import configure_logging
from bot.start_up import PORTAL, discord_start_up, fail

if TYPE_CHECKING:
    from bot.app import App
    from bot.importer import ImportProgress
    from bot.settings import Settings

log = logging.getLogger(__name__)


def _settings(*, long_running: bool = False) -> Settings:
    """The settings, or one sentence and exit code 2; logging set up for the command.

    A command that prints its result and ends logs only warnings unless LOG_LEVEL says otherwise: progress
    lines on stderr would interleave with its result lines on the terminal.
    """
    from bot.settings import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError as exc:
        click.echo(str(exc), err=True)
        raise click.exceptions.Exit(2) from None
    chosen = long_running or "log_level" in settings.model_fields_set
    configure_logging(settings.log_level if chosen else "WARNING")
    return settings


def async_command(func: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    """Let a click command be an async function that stops cleanly on SIGINT / SIGTERM.

    A command with a `stop` parameter gets the stop request and ends itself (the long-running ones stop taking
    input, then drain as on any exit). Any other command is cancelled: its `async with` blocks still close what
    they opened, and closing memory drains the ingest queue (into a spill file if storage cannot take it).
    """
    handles_stop = "stop" in inspect.signature(func).parameters

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(_stoppable(func, args, kwargs, handles_stop=handles_stop))

    return wrapper


async def _stoppable(
    func: Callable[..., Coroutine[Any, Any, Any]], args: Any, kwargs: Any, *, handles_stop: bool
) -> Any:
    from bot.settings import ConfigError
    from bot.start_up import fail

    stop = StopRequest()
    stop_on_signals(stop)
    try:
        if handles_stop:
            return await func(*args, stop=stop, **kwargs)
        try:
            return await unless_stopped(func(*args, **kwargs), stop)
        except StoppedError:
            _stopped_exit(stop, "Stopped before finishing.")
    except ConfigError as exc:  # e.g. a second bot on one SQLite file: one sentence, not a traceback
        fail(str(exc), exc)


def _stopped_exit(stop: StopRequest, sentence: str) -> NoReturn:
    """Say what a stop left undone, and exit as a process ended by that signal does (128 + its number)."""
    click.echo(sentence, err=True)
    raise click.exceptions.Exit(128 + (stop.received or signal.SIGTERM))


@click.group()
def main() -> None:
    """Elefant, a Discord bot with a long memory."""


async def _migrate(settings: Settings) -> None:
    from bot.start_up import database_problem
    from db.engine import create_engine
    from db.migrate import upgrade

    try:
        engine = create_engine(settings.database_url)  # makes an SQLite file's folder
    except OSError as exc:  # e.g. under /proc, or behind a link to a disk that is not mounted
        _folder_failed(exc, settings.database_url)
    try:
        await upgrade(engine)
    except Exception as exc:  # unreachable, refused, no such database …: say which and how to fix it, not a traceback
        sentence = database_problem(exc, settings.database_url)
        if sentence is None:
            raise
        fail(sentence, exc)
    finally:
        await engine.dispose()


def _folder_failed(exc: OSError, database_url: str) -> NoReturn:
    """End with one sentence when the SQLite file's folder cannot be made (the URL shown without a password)."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    folder = exc.filename or Path(url.database or "").parent
    reason = (exc.strerror or type(exc).__name__).lower()
    fail(
        f"The database in DATABASE_URL ({url.render_as_string(hide_password=True)}) cannot be created: the folder "
        f"{folder} cannot be made ({reason}); point DATABASE_URL at a folder this user can write in.",
        exc,
    )


@main.command()
@async_command
async def migrate() -> None:
    """Bring the database schema up to date."""
    await _migrate(_settings())
    click.echo("Database is up to date.")


class IsoDateTime(click.ParamType):
    """An ISO date, or date and time with a space or T, seconds and offset optional; aware, UTC unless it says."""

    name = "datetime"
    EXAMPLES = "2026-11-22, 2026-11-22 12:00 or 2026-11-22T12:00:30+01:00"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            moment = value
        else:
            try:
                moment = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a date and time; write it like {self.EXAMPLES}.", param, ctx)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


AT_OPTION = click.option(
    "--at",
    "at",
    type=IsoDateTime(),
    default=None,
    help="Time to use, e.g. 2026-11-22 12:00 (UTC unless an offset is given); default now.",
)


async def _require_guild(app: App, guild_id: int) -> None:
    """End the command with one sentence when nothing is stored for the guild (a mistyped id printed zeros)."""
    if await app.memory.admin.guild_known(guild_id):
        return
    known = await app.memory.admin.some_guilds(limit=6)
    if not known:
        fail(
            f"Nothing is stored for guild {guild_id}: this database holds no guild yet (run the bot or "
            "`python -m bot import` first, or check DATABASE_URL)."
        )
    listed = ", ".join(str(g) for g in known[:5]) + (", …" if len(known) > 5 else "")
    fail(f"Nothing is stored for guild {guild_id} in this database; it knows guild{'s' * (len(known) > 1)} {listed}.")


@main.command()
@AT_OPTION
@async_command
async def console(at: datetime | None, stop: StopRequest) -> None:
    """Chat with the bot in a simulated guild in this terminal (or from a pipe), its clock starting --at."""
    settings = _settings(long_running=True)
    from bot.console import run_console

    await _migrate(settings)
    await run_console(settings, start=at, stop=stop)


@main.command()
@click.option("--guild", "guild_id", type=int, required=True, help="Guild (server) ID.")
@click.option("--user", "user_id", type=int, required=True, help="Member ID.")
@AT_OPTION
@async_command
async def context(guild_id: int, user_id: int, at: datetime | None) -> None:
    """Print exactly what memory would inject for a member (at a given time)."""
    settings = _settings()
    from bot.app import open_app
    from bot.memory.clock import FakeClock

    await _migrate(settings)
    clock = FakeClock(at) if at else None
    async with open_app(settings.model_copy(update={"memory_wait_seconds": 600}), clock=clock) as app:
        await _require_guild(app, guild_id)
        known = await app.memory.recollection.context(guild_id, user_id, now=at)
        if not known:
            last = await app.memory.admin.last_message_at(guild_id, user_id)
    if known:
        click.echo(known)
        return
    # Memory covers the last week; an imported export is usually older, so say where to look.
    hint = f"; their last stored message is from {last:%Y-%m-%d}: try --at {last:%Y-%m-%dT%H:%M:%S}" if last else ""
    click.echo(f"(nothing is known about {user_id} in guild {guild_id} at that time{hint})")


@main.command()
@click.option("--guild", "guild_id", type=int, required=True, help="Guild (server) ID.")
@click.option(
    "--channel",
    "channel_id",
    type=int,
    default=None,
    help="Channel it is asked in (its own private talk is visible there); default: a public one.",
)
@click.option("--as", "asker", type=int, default=0, help="Member asking (their facts come first).")
@AT_OPTION
@click.argument("question")
@async_command
async def recall(guild_id: int, channel_id: int | None, asker: int, at: datetime | None, question: str) -> None:
    """Print exactly what the model would receive to answer a question about the past."""
    settings = _settings()
    from bot.app import open_app
    from bot.conversation import Request
    from bot.memory.clock import FakeClock

    await _migrate(settings)
    async with open_app(settings, clock=FakeClock(at) if at else None) as app:
        await _require_guild(app, guild_id)
        request = Request(guild_id, asker, question, channel_id=channel_id)
        await app.memory.recollection.vectors_ready(guild_id)  # one question: worth waiting for the model and the index
        memory, _ = await app.responder.recall_memory(request)
        waiting = await app.memory.admin.unembedded_count()
    click.echo(memory or "(nothing found)")
    if waiting:
        click.echo(
            f"({waiting:,} stored messages are not embedded yet, so only their words are searched; "
            "`python -m bot embed` embeds them now)",
            err=True,
        )


@main.command()
@async_command
async def embed() -> None:
    """Embed every stored message that has no vector yet (what the bot otherwise does in the background)."""
    settings = _settings()
    from tqdm import tqdm

    from bot.app import open_app

    await _migrate(settings)
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


@main.command(name="import")
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
    settings = _settings()
    from bot.exports import DirectMessagesError, ImportFileError, export_files

    paths, refused = export_files(files)  # what cannot be read is refused before seconds of imports
    for sentence in refused:
        click.echo(f"Not imported: {sentence}", err=True)
    if not paths:
        raise click.exceptions.Exit(1)
    failed = len(refused)
    from bot.app import open_app
    from bot.importer import ImportProgress, ImportSummary, describe, import_file

    await _migrate(settings)
    summary = ImportSummary()
    stopped: ImportProgress | None = None
    async with open_app(settings) as app:
        for path in paths:
            tracking = ImportProgress(path)
            try:
                result = await unless_stopped(
                    import_file(
                        app.memory,
                        path,
                        include_bots=settings.ingest_other_bots,
                        progress=sys.stderr.isatty(),
                        bot_name=settings.bot_name,
                        private=private,
                        tracking=tracking,
                    ),
                    stop,
                )
            except DirectMessagesError as exc:
                click.echo(f"Skipped: {exc}", err=True)
                continue
            except ImportFileError as exc:
                failed += 1
                click.echo(f"Not imported: {exc}", err=True)
                continue
            except StoppedError:
                stopped = tracking
                break
            click.echo(describe(result))
            summary.add(result)
    # Said after memory is closed: what was read is stored by then (or in a spill file, which the log names).
    for line in summary.lines():
        click.echo(line)
    if stopped is not None:
        left = len(paths) - paths.index(stopped.path) - 1
        later = f" ({left} later file{'s' if left != 1 else ''} not started)" if left else ""
        how_far = (
            f"after {stopped.done:,} of {stopped.total:,} messages of {stopped.path.name}"
            if stopped.total
            else f"before reading {stopped.path.name}"
        )
        _stopped_exit(
            stop,
            f"Import stopped {how_far}{later}; run the same command again to finish (messages already stored are "
            "not duplicated).",
        )
    if not summary.guilds and not failed:
        click.echo("Nothing was imported.", err=True)
    if failed or not summary.guilds:
        raise click.exceptions.Exit(1)


@main.command()
@click.option("--guild", "guild_id", type=int, required=True, help="Guild (server) ID.")
@async_command
async def stats(guild_id: int) -> None:
    """What is stored for a guild, and what the model cost in the last 24 hours."""
    settings = _settings()
    from bot.app import open_app

    await _migrate(settings)
    async with open_app(settings) as app:
        await _require_guild(app, guild_id)
        figures = await app.memory.admin.stats(guild_id)
    for name, value in figures.items():
        click.echo(f"{name.replace('_', ' '):24} {value:,}")


@main.command()
@click.option("--guild", "guild_id", type=int, required=True, help="Guild (server) ID.")
@click.option("--user", "user_id", type=int, help="Delete everything about this member.")
@click.option("--channel", "channel_id", type=int, help="Delete this channel's messages.")
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
    settings = _settings()
    from bot.app import open_app
    from bot.memory.admin import rows_in_words

    await _migrate(settings)
    async with open_app(settings) as app:
        await _require_guild(app, guild_id)
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
    settings = _settings()
    from bot.app import open_app
    from bot.memory.admin import rows_in_words

    await _migrate(settings)
    async with open_app(settings) as app:
        await _require_guild(app, guild_id)
        counts = await app.memory.admin.purge(guild_id, user_id=user_id, channel_id=channel_id, before=before)
    click.echo(f"Deleted: {rows_in_words(counts)}.")


@main.command()
@click.option("--guild", "guild_id", type=int, required=True, help="Guild (server) ID.")
@click.option("--user", "user_id", type=int, required=True, help="Member ID.")
@async_command
async def export(guild_id: int, user_id: int) -> None:
    """Print a member's facts, revisions and summaries as Markdown."""
    settings = _settings()
    from bot.app import open_app

    await _migrate(settings)
    async with open_app(settings) as app:
        await _require_guild(app, guild_id)
        click.echo(await app.memory.admin.export(guild_id, user_id), nl=False)


def _token(settings: Settings, command: str) -> str:
    if settings.discord_token is None:
        fail(f"`{command}` needs DISCORD_TOKEN (the bot's token from {PORTAL} → your application → Bot).")
    return settings.discord_token.get_secret_value()


@main.command()
@async_command
async def run(stop: StopRequest) -> None:
    """Run the bot (migrates the database first; syncs slash commands when they changed)."""
    settings = _settings(long_running=True)
    from bot.app import run_discord
    from bot.console import run_console
    from bot.llm.probe import check_models

    await _migrate(settings)
    from bot.settings import ConfigError

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


@main.command()
@async_command
async def sync() -> None:
    """Send the slash commands to Discord now (`run` sends them only when they changed)."""
    settings = _settings()
    token = _token(settings, "sync")  # refused before seconds of imports
    from bot.app import open_app
    from bot.discord_bot import ElefantBot

    await _migrate(settings)
    with discord_start_up(settings):
        async with open_app(settings) as app:
            bot = ElefantBot(memory=app.memory, responder=app.responder, settings=settings, sync_commands=False)
            async with bot:
                await bot.login(token)  # no gateway connection: syncing is an HTTP call
                await bot.sync_commands(force=True)
    where = f"to guild {settings.dev_guild_id}" if settings.dev_guild_id else "globally"
    click.echo(f"Slash commands synced {where}.")


@main.command()
@click.option("--client-id", type=int, help="The Application ID (default: read from DISCORD_TOKEN).")
def invite(client_id: int | None) -> None:
    """Print the link that adds the bot to a server, with the scopes and permissions it needs."""
    settings = _settings()
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
