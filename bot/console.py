"""Console mode: a simulated guild in the terminal, driving the same conversation code and MemoryManager.

Reads commands from a terminal (with a prompt) or from a pipe (plain output, for scripts and tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TextIO

from yarl import URL

from bot.app import App, open_app
from bot.console_input import Lines
from bot.lifecycle import StoppedError, abandon, unless_stopped
from bot.memory.clock import Clock, FakeClock
from bot.memory.types import IncomingMessage, Kind
from bot.metrics.server import serve_metrics
from bot.reply.respond import Answer
from bot.reply.routing import Request, address, stored_kind
from bot.sending import defuse
from bot.settings import Settings

GUILD = (1 << 60) + 4242
CHANNEL = (1 << 60) + 4343
BOT_ID = (1 << 60) + 1
MAX_AHEAD_DAYS = 3_650
HELP = """\
Type a message to say it as the current speaker. Talk to the bot by starting with its name
("{bot}, remember that I like tea") or by mentioning @{bot_lower}.
  /as NAME        speak as NAME (anyone; created on first use)
  @NAME           mention someone in a message
  #NAME           mention a channel in a message ("catch me up on #events")
  /in NAME        speak in channel NAME (default general; created on first use)
  /reply N        your next message replies to line N
  /wait 3h        move the clock forward (m, h or d; as if you were away)
  /day +N         move the clock N days forward (summaries are per day)
  /context NAME   show exactly what memory would give the bot about NAME
  /stats          what is stored
  /help           this text
  /quit           leave (Ctrl-D works too)"""


def message_ids() -> Iterator[int]:
    """Message IDs no earlier run used: snowflakes of the real time of start (the simulated clock may repeat)."""
    discord_epoch_ms = 1_420_070_400_000
    start = (int(datetime.now(UTC).timestamp() * 1000) - discord_epoch_ms) << 22
    return itertools.count(start + random.randrange(1 << 16))


def channel_id(name: str) -> int:
    """A stable ID for a console channel: the first one, general, is CHANNEL."""
    name = name.lstrip("#").casefold()
    return CHANNEL if name == "general" else (1 << 60) + 20_000 + zlib.crc32(name.encode())


def member_id(name: str) -> int:
    """A stable, snowflake-sized ID for a console member."""
    return (1 << 60) + 10_000 + zlib.crc32(name.casefold().encode())


@dataclass
class Console:
    """The simulated guild and its transcript."""

    app: App
    settings: Settings
    clock: FakeClock
    out: TextIO
    speaker: str = "alice"
    channel: str = "general"
    reply_to: int | None = None
    lines: list[IncomingMessage] = field(default_factory=list)
    ids: Iterator[int] = field(default_factory=message_ids)
    _channels: set[str] = field(default_factory=set)  # the channels spoken in, by name

    def say(self, text: str) -> None:
        """Print a line of output."""
        print(text, file=self.out, flush=True)

    async def handle(self, line: str) -> bool:
        """Handle one input line; False when the user wants to leave."""
        line = line.strip()
        if not line:
            return True
        if line.startswith("/"):
            return await self._command(line)
        await self._message(line)
        return True

    async def _command(self, line: str) -> bool:
        name, _, arg = line[1:].partition(" ")
        arg = arg.strip()
        if name in {"quit", "exit"}:
            return False
        if name == "help":
            self.say(HELP.format(bot=self.settings.bot_name, bot_lower=self.settings.bot_name.lower()))
        elif name == "as" and arg:
            self.speaker = arg.lstrip("@")
            self.say(f"(you are now {self.speaker})")
        elif name == "in" and arg:
            self.channel = arg.lstrip("#").casefold()
            self.say(f"(you are now in #{self.channel})")
        elif name == "wait" and (match := re.fullmatch(r"\+?(\d{1,18})\s*([mhd])", arg)):
            unit = {"m": 60, "h": 3600, "d": 86400}[match.group(2)]
            await self._ahead(int(match.group(1)) * unit)
        elif name == "reply" and arg.isdigit() and 1 <= int(arg) <= len(self.lines):
            self.reply_to = int(arg)
            self.say(f"(your next message replies to line {arg})")
        elif name == "day" and re.fullmatch(r"\+?\d{1,18}", arg):
            await self._ahead(int(arg) * 86400)
        elif name == "context" and arg:
            await self.app.memory.flush()
            known = await self.app.memory.recollection.describe(GUILD, member_id(arg.lstrip("@")), patient=True)
            self.say(known or f"(nothing is known about {arg} yet)")
        elif name == "stats":
            await self._stats()
        else:
            self.say(f"(unknown command {line!r}; /help lists them)")
        return True

    async def _ahead(self, seconds: int) -> None:
        """Move the clock forward, at most MAX_AHEAD_DAYS at once (further, a date overflowed and ended the session)."""
        try:
            if seconds > MAX_AHEAD_DAYS * 86400:
                raise OverflowError
            self.clock.now() + timedelta(seconds=seconds)  # past the year 9999 after many moves: refused too
        except OverflowError:
            self.say(f"(the clock moves at most {MAX_AHEAD_DAYS:,} days at once; it is still {self._now()})")
            return
        self.clock.advance(seconds=seconds)
        await self.app.memory.flush()
        self.say(f"(it is now {self._now()})")

    def _now(self) -> str:
        return f"{self.clock.now():%A %Y-%m-%d %H:%M} UTC"

    async def _message(self, text: str) -> None:
        author = member_id(self.speaker)
        content = re.sub(r"@([\w.-]+)", lambda m: self._mention(m.group(1)), text)
        content = re.sub(r"(?<![\w&])#([\w-]+)", lambda m: self._channel(m.group(1)), content)
        replied = self.lines[self.reply_to - 1] if self.reply_to else None
        self.reply_to = None
        addressed = address(
            content,
            bot_user_id=BOT_ID,
            bot_name=self.settings.bot_name,
            replied_to_bot=replied is not None and replied.author_id == BOT_ID,
        )
        message = self._line(author, self.speaker, content, replied, stored_kind(addressed))
        await self.app.memory.intake.message(message)
        self.say(f"[{len(self.lines)}] {self.speaker}: {text}")
        if addressed is None:
            return
        request = Request(
            GUILD,
            author,
            addressed,
            reply_to_author_id=replied.author_id if replied else None,
            reply_to_text=replied.content if replied else None,
            channel_id=channel_id(self.channel),
            message_id=message.message_id,
            bot_user_id=BOT_ID,
        )
        await self._settle()
        # Under way until shown, as the listener holds a reply (what waits for the gap after it runs after that).
        async with self.app.memory.recollection.under_way():
            answer: Answer | None = None
            try:
                # Within REPLY_DEADLINE_SECONDS whatever the model does; a facts change that outlives it is reported
                # at the start of the next reply (a follow-up line would land in the middle of someone's typing).
                answer = await self.app.responder.respond_within(
                    request, deadline=self.settings.reply_deadline_seconds, is_admin=True
                )
                text = answer.text
            except Exception as exc:  # noqa: BLE001 - the console shows the failure instead of dying
                text = f"Sorry, I couldn't think that through just now ({type(exc).__name__})."
            reply = self._line(BOT_ID, self.settings.bot_name, text, message, Kind.BOT)
            if answer is not None:
                await self.app.memory.intake.reply(reply, members=answer.members, messages=answer.quoted)
            self.say(f"[{len(self.lines)}] {self.settings.bot_name}: {await self._shown(text)}")

    async def _settle(self) -> None:
        """A simulation should be deterministic: what was said is stored, and with vectors embedded, before the bot
        answers (a person typing gives it that time anyway; a pipe does not)."""
        memory = self.app.memory

        async def stored() -> None:
            await memory.flush()
            if memory.embedding is not None and await memory.recollection.vectors_ready(GUILD):
                await memory.embedding.idle()
                await memory.flush()

        # Not while storage is down: the wait would have no end, and the bot answers from what it has, as on Discord.
        settling = asyncio.ensure_future(stored())
        while not settling.done() and not memory.storage.down:
            await asyncio.wait({settling}, timeout=0.5)
        if not settling.done():
            abandon(settling, name="console settle")

    async def _shown(self, text: str) -> str:
        """The model's words as a member would see them: mentions as names, @everyone and @here inert."""
        bot = {BOT_ID: self.settings.bot_name}
        [rendered] = await self.app.memory.directory.render_all_mentions(GUILD, [text], also=bot)
        channels = {channel_id(name): name for name in (self.channel, *self._channels)}
        rendered = re.sub(r"<#(\d+)>", lambda m: f"#{channels.get(int(m.group(1)), 'a channel')}", rendered)
        return defuse(rendered)

    def _channel(self, name: str) -> str:
        """`#name` as Discord writes a channel mention (and the channel known by name from now on)."""
        self._channels.add(name.casefold())
        return f"<#{channel_id(name)}>"

    def _mention(self, name: str) -> str:
        if name.casefold() == self.settings.bot_name.casefold():
            return f"<@{BOT_ID}>"
        return f"<@{member_id(name)}>"

    def _line(
        self, author: int, name: str, content: str, replied: IncomingMessage | None, kind: Kind
    ) -> IncomingMessage:
        self.clock.advance(seconds=30)
        self._channels.add(self.channel)
        message = IncomingMessage(
            GUILD,
            channel_id(self.channel),
            next(self.ids),
            author,
            name,
            content,
            self.clock.now(),
            reply_to_id=replied.message_id if replied else None,
            kind=kind,
        )
        self.lines.append(message)
        return message

    async def _stats(self) -> None:
        figures = await self.app.memory.admin.stats(GUILD)
        mode = _model_words(self.settings)
        self.say(
            f"(messages {figures['messages']}, people with facts {figures['members_with_facts']}, daily summaries "
            f"{figures['daily_summaries']}, LLM calls {figures['llm_calls_24h']}; model: {mode})"
        )


def _model_words(settings: Settings, *, why: bool = False) -> str:
    """The model the console talks to, in a few words (with `why`, also why it is offline)."""
    if settings.provider == "gemini":
        return "Gemini"
    if settings.provider == "openai":
        where = URL(settings.openai_base_url or "https://api.openai.com/v1").with_user(None)  # no password shown
        return f"{settings.model_settings['OPENAI_MODEL_FAST']} at {where}"
    if not why:
        return "offline provider"
    return f"offline provider ({'LLM_PROVIDER=offline' if settings.llm_provider else 'no GEMINI_API_KEY'})"


async def run_console(
    settings: Settings,
    *,
    start: datetime | None = None,
    stdin: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
    stop: asyncio.Event | None = None,
) -> None:
    """The console loop; a prompt and a banner only when a person is typing.

    When `stop` is set (SIGINT / SIGTERM) it stops taking input at once, abandoning the line in hand (what that
    line had already queued stays queued), and memory drains on the way out like the bot's.
    """
    interactive = stdin.isatty()
    clock = FakeClock(start or Clock().now())
    stop = stop or asyncio.Event()
    lines = Lines(stdin, interactive)
    async with open_app(settings, clock=clock, background=True) as app, serve_metrics(settings, app):
        await _continue_clock(app, clock)
        console = Console(app, settings, clock, out)
        for name in ("alice", "bob"):
            app.memory.directory.note_name(GUILD, member_id(name), name, name)
        if interactive:
            mode = _model_words(settings, why=True)
            console.say(f"Elefant console — a simulated guild, {mode}, database {settings.database_url}.")
            console.say(f"You are alice. Try: {settings.bot_name}, remember that I like green tea   (/help for more)")
        try:
            while True:
                line = await unless_stopped(lines.next(f"{console.speaker}> " if interactive else None), stop)
                if line is None or not await unless_stopped(console.handle(line), stop):
                    break
            # Bounded: with storage gone the wait would never end; closing memory keeps what is left in a spill file.
            with contextlib.suppress(TimeoutError):
                await unless_stopped(asyncio.wait_for(app.memory.flush(), settings.ingest_shutdown_seconds), stop)
        except StoppedError:
            if interactive:
                console.say("")  # off the prompt line
        finally:
            lines.close()


async def _continue_clock(app: App, clock: FakeClock) -> None:
    """Start after the newest line stored in the simulated guild: an earlier session may have moved its clock days
    ahead (/day), and behind it, its lines would be the future (recall would not see them; summaries would not
    be written)."""
    newest = await app.memory.admin.last_message_at(GUILD)
    if newest is not None and newest >= clock.now():
        clock.advance(seconds=(newest - clock.now()).total_seconds() + 60)
