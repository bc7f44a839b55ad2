"""Why the bot cannot start, as one sentence a person can act on: which setting, and what fixes it.

Every command meets the database first (it migrates), and `run` / `sync` meet Discord; what they answer when
something is wrong becomes one line on stderr and exit code 1. The traceback is kept for LOG_LEVEL=DEBUG.
Heavy libraries (discord.py, SQLAlchemy, Alembic) are imported only once there is something to explain, so
`python -m bot --help` never pays for them.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import click

from bot.invocation import command_name

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from bot.settings import Settings

log = logging.getLogger(__name__)
PORTAL = "https://discord.com/developers/applications"
MISSING_ACCESS = 50001  # Discord's JSON error code: the bot cannot see that guild


def fail(sentence: str, exc: BaseException | None = None) -> NoReturn:
    """One sentence for a person, exit code 1; the traceback only at LOG_LEVEL=DEBUG."""
    if exc is not None:
        log.debug("start-up failed", exc_info=exc)
    click.echo(sentence, err=True)
    raise click.exceptions.Exit(1)


def database_problem(exc: BaseException, database_url: str) -> str | None:
    """What is wrong with the database in DATABASE_URL, given what opening it raised; None if not the database."""
    from alembic.util.exc import CommandError
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import DBAPIError

    url = make_url(database_url)
    where = f"The database in DATABASE_URL ({url.render_as_string(hide_password=True)})"
    if isinstance(exc, CommandError) and "Can't locate revision" in str(exc):
        revision = str(exc).rsplit(" ", 1)[-1]
        return (
            f"{where} was set up by a newer version of Elefant (its schema revision {revision} is unknown here): "
            "update Elefant, or point DATABASE_URL at another database."
        )
    if isinstance(exc, OSError) and url.get_backend_name() != "sqlite":
        return _unreachable(exc, where, url.host or "localhost", url.port or 5432)
    if isinstance(exc, OSError | DBAPIError):
        return _refused(exc.orig or exc if isinstance(exc, DBAPIError) else exc, where, url)
    return None


def _unreachable(exc: OSError, where: str, host: str, port: int) -> str:
    """The network between here and the database server."""
    if isinstance(exc, socket.gaierror):
        return (
            f"{where} cannot be reached: the host {host} is unknown (check its spelling in DATABASE_URL, or this "
            "machine's network connection and DNS)."
        )
    if isinstance(exc, ConnectionRefusedError):
        return (
            f"{where} cannot be reached: nothing accepts connections on {host}:{port} (start PostgreSQL there, or "
            "correct the host or port in DATABASE_URL)."
        )
    if isinstance(exc, TimeoutError):
        return (
            f"{where} cannot be reached: {host}:{port} did not answer in time (check the host and port in "
            "DATABASE_URL, and that no firewall drops the connection)."
        )
    return (
        f"{where} cannot be reached: {_reason(exc)} (check this machine's network connection and the host in "
        "DATABASE_URL)."
    )


def _refused(orig: BaseException, where: str, url: URL) -> str:
    """What the database itself said (PostgreSQL's SQLSTATE, SQLite's message)."""
    reason = _reason(orig)
    code = getattr(orig, "sqlstate", None)
    host, port = url.host or "localhost", url.port or 5432
    if code == "3D000":  # invalid_catalog_name
        user = f" -U {url.username}" if url.username else ""
        return (
            f"{where} does not exist: PostgreSQL at {host}:{port} has no database {url.database} (create it with "
            f"`createdb -h {host} -p {port}{user} {url.database}`, or correct the database name in DATABASE_URL)."
        )
    if code in {"28000", "28P01"}:  # invalid_authorization_specification, invalid_password
        return (
            f"{where} refused the user {url.username}: {reason} (correct the user name or password in "
            "DATABASE_URL, or create that role in PostgreSQL)."
        )
    if code == "42501":  # insufficient_privilege: migrations create tables
        return (
            f"{where} does not let {url.username} create tables: {reason} (grant it CREATE on the database, or "
            "use the database's owner in DATABASE_URL)."
        )
    if "file is not a database" in reason:
        return f"{where} is not an SQLite database file (point DATABASE_URL at another file, or move this one away)."
    if "database is locked" in reason:
        return (
            f"{where} is locked by another process (stop the other program writing to it, or point DATABASE_URL "
            "at another file)."
        )
    return f"{where} cannot be used: {reason} (check DATABASE_URL)."


def _reason(exc: BaseException) -> str:
    """The driver's own words, one line, without its closing full stop (the sentence goes on)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__


@contextlib.contextmanager
def discord_start_up(settings: Settings) -> Iterator[None]:
    """What Discord answers at start-up, as one sentence naming the setting or switch that fixes it."""
    import aiohttp
    import discord

    try:
        yield
    except discord.LoginFailure as exc:
        fail(
            "Discord refused the token in DISCORD_TOKEN: copy it again from the developer portal "
            f"({PORTAL} → your application → Bot → Reset Token).",
            exc,
        )
    except discord.PrivilegedIntentsRequired as exc:
        switches = "“Message Content Intent”" + (
            " and “Server Members Intent”" if settings.discord_members_intent else ""
        )
        members = " (or set DISCORD_MEMBERS_INTENT=false)" if settings.discord_members_intent else ""
        fail(
            f"Discord refused the connection because a privileged intent is switched off: turn on {switches} "
            f"in the developer portal ({PORTAL} → your application → Bot → Privileged Gateway Intents){members}.",
            exc,
        )
    except (aiohttp.ClientConnectionError, discord.GatewayNotFound, TimeoutError, OSError) as exc:
        host = getattr(exc, "host", None) or "discord.com"
        fail(
            f"Cannot reach Discord ({host}): check this machine's network connection, DNS, firewall or proxy, "
            "then start again.",
            exc,
        )
    except discord.Forbidden as exc:
        if settings.dev_guild_id and exc.code == MISSING_ACCESS:  # syncing commands to a server the bot is not in
            fail(
                f"Discord refused the slash commands for DEV_GUILD_ID={settings.dev_guild_id} ({exc.text}): add the "
                f"bot to that server with the link `{command_name()} invite` prints, or correct or unset DEV_GUILD_ID.",
                exc,
            )
        fail(f"Discord refused a start-up request ({exc.status} {exc.text or 'Forbidden'}); check DISCORD_TOKEN.", exc)
    except discord.HTTPException as exc:
        fail(f"Discord answered {exc.status} while starting ({exc.text or 'no reason given'}); try again later.", exc)
