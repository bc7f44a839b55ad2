"""Command line: `python -m bot run | migrate | …` (installed as `elefant`).

Nothing heavy is imported at module level: `--help` must answer at once, so each command imports what it runs
on (SQLAlchemy, Alembic, discord.py, google-genai) itself, after reading the settings — a wrong setting is
answered before seconds of imports. The commands live by what they do: serving.py (run, console, sync,
invite), reading.py (context, recall, stats, export), prompt.py (prompt), database.py (migrate, embed, purge)
and imports.py (import); runner.py holds what they share, params.py what an id or a date may be.
"""

from __future__ import annotations

import click

from bot.cli.database import embed, migrate, purge
from bot.cli.imports import import_
from bot.cli.params import IsoDateTime
from bot.cli.prompt import prompt
from bot.cli.reading import context, export, recall, stats
from bot.cli.serving import console, invite, run, sync

__all__ = ["IsoDateTime", "main"]


@click.group()
def main() -> None:
    """Elefant, a Discord bot with a long memory."""


for _command in (console, context, embed, export, import_, invite, migrate, prompt, purge, recall, run, stats, sync):
    main.add_command(_command)
