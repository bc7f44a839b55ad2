"""`python -m bot prompt`: the route the bot takes for a message and the exact text the model would receive.

For people asking "why did it answer that?" and for benchmarks. It runs the real reply path (the responder, the
model turns) against the offline provider wrapped in a recorder, so what it prints is what was sent, not a second
assembly of it. Offline, routing is the bot's offline routing (its fast path; the rest is chat); a configured
model would route the rest itself. Nothing is changed: a message that asks to remember or forget is routed and
shown, not carried out.
"""

from __future__ import annotations

from datetime import datetime

import click

from bot.cli.params import AT_OPTION, GUILD_OPTION, Snowflake
from bot.cli.runner import async_command, command_settings, guild_app


@click.command()
@GUILD_OPTION
@click.option("--user", "user_id", type=Snowflake(), required=True, help="Member who says the message.")
@click.option(
    "--channel",
    "channel_id",
    type=Snowflake(),
    default=None,
    help="Channel it is said in (its own private talk is visible there); default: a public one.",
)
@AT_OPTION
@click.argument("message")
@async_command
async def prompt(guild_id: int, user_id: int, channel_id: int | None, at: datetime | None, message: str) -> None:
    """Print the route the bot takes for MESSAGE and the exact system and user text the model would receive
    (offline; with --at, as at that moment: nothing said after it)."""
    settings = command_settings()
    from bot.app import responder_for
    from bot.llm.offline import OfflineProvider
    from bot.llm.recording import RecordingProvider
    from bot.memory.clock import ReplayClock
    from bot.reply.routing import Request, Route, address, fast_route

    # Offline whatever the settings say, and patient: what the model would receive once memory is ready.
    offline = settings.model_copy(update={"llm_provider": "offline", "memory_wait_seconds": 600})
    recorder = RecordingProvider(OfflineProvider())
    text = address(message, bot_user_id=0, bot_name=settings.bot_name, replied_to_bot=False) or message
    request = Request(guild_id, user_id, text, channel_id=channel_id)
    async with guild_app(offline, guild_id, clock=ReplayClock(at) if at else None, offline=recorder) as app:
        await app.memory.recollection.vectors_ready(guild_id)  # one message: worth waiting for the model and index
        decision = await fast_route(request, app.memory.directory)
        if decision is not None and decision.route in {Route.REMEMBER, Route.FORGET}:
            click.echo(f"route: {decision.route.value}")
            click.echo("(a facts change: `prompt` shows the route and changes nothing)")
            return
        # As the bot replies, except that a question about the past is answered by the model too (offline the bot
        # only lists what it found): its prompt is what a configured model receives on that route.
        responder = responder_for(app.memory, app.llm, offline, model_answers_recall=True)
        recorder.calls.clear()  # start-up's own calls (summaries) are not the reply's
        answer = await responder.respond(request)
        waiting = await app.memory.admin.unembedded_count()
    click.echo(f"route: {answer.route.value}")
    sent = recorder.last("recap" if answer.route is Route.RECAP else "chat")
    if sent is None:
        click.echo("(this route answers without the model)")
    else:
        click.echo(f"=== system ===\n{sent.prompt.system}\n=== user ===\n{sent.prompt.user}")
    click.echo(f"=== answer (offline) ===\n{answer.text}")
    if waiting:
        click.echo(f"({waiting:,} stored messages are not embedded yet, so only their words are searched)", err=True)
