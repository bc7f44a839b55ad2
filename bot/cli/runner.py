"""What every command shares: settings and logging, running async and stopping, the database, the guild asked about.

What the options accept (ids, dates) is bot/cli/params.py.

Nothing heavy at module level (see bot/cli/__init__.py): what a command needs is imported when it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import signal
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from bot.invocation import command_name
from bot.lifecycle import StoppedError, StopRequest, stop_on_signals, unless_stopped
from bot.logging_setup import configure_logging
from bot.start_up import fail

if TYPE_CHECKING:
    from bot.app import App
    from bot.settings import Settings


def command_settings(*, long_running: bool = False) -> Settings:
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

    stop = StopRequest()
    stop_on_signals(stop)
    try:
        if handles_stop:
            return await func(*args, stop=stop, **kwargs)
        try:
            return await unless_stopped(func(*args, **kwargs), stop)
        except StoppedError:
            stopped_exit(stop, "Stopped before finishing.")
    except ConfigError as exc:  # e.g. a second bot on one SQLite file: one sentence, not a traceback
        fail(str(exc), exc)


def stopped_exit(stop: StopRequest, sentence: str) -> NoReturn:
    """Say what a stop left undone, and exit as a process ended by that signal does (128 + its number)."""
    click.echo(sentence, err=True)
    raise click.exceptions.Exit(128 + (stop.received or signal.SIGTERM))


async def migrate_database(settings: Settings) -> None:
    """Bring the schema up to date; a database that cannot be used ends the command with one sentence."""
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


@contextlib.asynccontextmanager
async def guild_app(settings: Settings, guild_id: int, **options: Any) -> AsyncIterator[App]:
    """The app on an up-to-date database, for a guild something is stored for (else one sentence, exit 1)."""
    from bot.app import open_app

    await migrate_database(settings)
    async with open_app(settings, **options) as app:
        await _require_guild(app, guild_id)
        yield app


async def _require_guild(app: App, guild_id: int) -> None:
    """End the command with one sentence when nothing is stored for the guild (a mistyped id printed zeros)."""
    if await app.memory.admin.guild_known(guild_id):
        return
    known = await app.memory.admin.some_guilds(limit=6)
    if not known:
        fail(
            f"Nothing is stored for guild {guild_id}: this database holds no guild yet (run the bot or "
            f"`{command_name()} import` first, or check DATABASE_URL)."
        )
    listed = ", ".join(str(g) for g in known[:5]) + (", …" if len(known) > 5 else "")
    fail(f"Nothing is stored for guild {guild_id} in this database; it knows guild{'s' * (len(known) > 1)} {listed}.")
