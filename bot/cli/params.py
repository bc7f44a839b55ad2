"""What the command line accepts for a Discord id and for a moment, and the options every command shares.

A value outside what Discord can have is refused while the arguments are read, before settings, imports or the
database: one line on stderr and exit code 2. Passed on, a 20-digit id overflowed the database's BIGINT and a year
like 0001 or 9999 overflowed date arithmetic, each as a traceback; an id of 0 or below matched nothing, silently.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import IO, Any, NoReturn

import click

# Discord's ids are snowflakes: 64-bit, their top bit never set (the database stores them as a signed BIGINT).
LARGEST_ID = 2**63 - 1
# Discord's epoch, the first moment a snowflake (so a message) can carry; the end of the range allows for clocks
# that run a little ahead of this machine's, and for time zones ahead of UTC.
DISCORD_EPOCH = datetime(2015, 1, 1, tzinfo=UTC)
AHEAD = timedelta(days=1)


class BadValue(click.BadParameter):
    """A refused value, said in one line: click's usage and help hint would bury the sentence that matters."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file, err=True)


class Snowflake(click.ParamType):
    """A Discord id (guild, member, channel, application): a whole number from 1 to 2^63 - 1."""

    name = "id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            try:
                number = int(str(value).strip())
            except ValueError:
                number = 0
        if not 1 <= number <= LARGEST_ID:
            _refuse(
                f"{value!r} is not a Discord id; give a whole number from 1 to {LARGEST_ID} (Discord's Copy ID, "
                "in Developer Mode).",
                param,
                ctx,
            )
        return number


class IsoDateTime(click.ParamType):
    """An ISO date, or date and time with a space or T, seconds and offset optional; aware, UTC unless it says.

    Only moments a Discord message can have: from Discord's epoch to a day after now.
    """

    name = "datetime"
    EXAMPLES = "2026-11-22, 2026-11-22 12:00 or 2026-11-22T12:00:30+01:00"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            moment = value
        else:
            try:
                moment = datetime.fromisoformat(str(value).strip())
            except ValueError:
                _refuse(f"{value!r} is not a date and time; write it like {self.EXAMPLES}.", param, ctx)
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        latest = datetime.now(UTC) + AHEAD
        if not DISCORD_EPOCH <= moment <= latest:
            _refuse(
                f"{value!r} is outside the time Discord messages can have; give a moment from "
                f"{DISCORD_EPOCH:%Y-%m-%d} to {latest:%Y-%m-%d %H:%M} UTC.",
                param,
                ctx,
            )
        return moment


def _refuse(sentence: str, param: click.Parameter | None, ctx: click.Context | None) -> NoReturn:
    raise BadValue(sentence, ctx=ctx, param=param)


AT_OPTION = click.option(
    "--at",
    "at",
    type=IsoDateTime(),
    default=None,
    help="Time to use, e.g. 2026-11-22 12:00 (UTC unless an offset is given; from 2015 to now); default now.",
)
GUILD_OPTION = click.option("--guild", "guild_id", type=Snowflake(), required=True, help="Guild (server) ID.")
