"""Listener Cog: every guild message, edit and delete goes to memory; messages addressed to the bot get a reply."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from bot.lifecycle import set_or_done, spawn
from bot.memory.intake.face import Intake
from bot.memory.recollection import Recollection
from bot.memory.types import IncomingMessage, Kind
from bot.reply.respond import Answer
from bot.reply.routing import Request, address, stored_kind
from bot.sending import defuse, split_message
from bot.speech import spoken

if TYPE_CHECKING:
    from bot.discord_bot import ElefantBot

log = logging.getLogger(__name__)
APOLOGY = "Sorry, I couldn't think that through just now. Please try again in a moment."
TYPING_AFTER_SECONDS = 0.3  # a reply quicker than this shows no typing indicator
TYPING_SETTLE_SECONDS = 0.25  # the most a reply waits for the indicator's first request already under way


def speech_of(message: discord.Message) -> str:
    """The words memory keeps for a message (files, stickers and forwarded text included)."""
    snapshot = message.message_snapshots[0] if message.message_snapshots else None
    return spoken(
        message.content,
        files=[a.filename for a in message.attachments],
        stickers=[s.name for s in message.stickers],
        forwarded=snapshot.content if snapshot is not None else None,
        forwarded_files=[a.filename for a in snapshot.attachments] if snapshot is not None else (),
        forwarded_stickers=[s.name for s in snapshot.stickers] if snapshot is not None else (),
    )


def incoming(message: discord.Message, *, kind: Kind = Kind.SPEECH, content: str | None = None) -> IncomingMessage:
    """The memory layer's view of a Discord message (IDs, not objects)."""
    assert message.guild is not None
    reference = _reply_reference(message)
    return IncomingMessage(
        guild_id=message.guild.id,
        channel_id=message.channel.id,
        message_id=message.id,
        author_id=message.author.id,
        author_name=message.author.display_name,
        author_username=message.author.name,
        content=speech_of(message) if content is None else content,
        created_at=message.created_at,
        edited_at=message.edited_at,
        reply_to_id=reference.message_id if reference else None,
        mentioned_user_ids=tuple(user.id for user in message.mentions),
        kind=kind,
    )


def channel_scope(channel: object, everyone: discord.Role) -> tuple[bool, int | None, str]:
    """(private, parent id, type) of where a message was written.

    A thread answers `permissions_for` with its parent's permissions, so a private thread in a public channel
    would look public: its own type decides. A public thread is as private as its parent (and inherits the
    parent's admin include / exclude through `parent_id`).
    """
    if isinstance(channel, discord.Thread):
        parent = channel.parent
        hidden_parent = parent is not None and not parent.permissions_for(everyone).read_messages
        private = channel.type is discord.ChannelType.private_thread or hidden_parent
        return private, channel.parent_id, channel.type.name
    readable = channel.permissions_for(everyone).read_messages  # type: ignore[attr-defined]
    return not readable, None, getattr(getattr(channel, "type", None), "name", "text")


class Listener(commands.Cog):
    """Feeds memory from the gateway and answers people who talk to the bot."""

    def __init__(self, bot: ElefantBot, intake: Intake, recollection: Recollection) -> None:
        self.bot = bot
        self.intake = intake
        self._recollection = recollection  # only to mark a reply under way

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        """Store every guild message people write; reply when addressed."""
        if self._not_speech(message):
            return
        text, replied = self._addressed(message)
        replying = text is not None and not message.author.bot
        # A reply is under way from here, before the message is stored: background embedding and the writer's timed
        # batches let it go first (the question itself is never embedded: it is no evidence, see `stored_kind`).
        async with self._recollection.under_way() if replying else contextlib.nullcontext():
            await self._store(message, text)
            if replying:
                assert text is not None
                await self._answer(message, self._request(message, text, replied))

    async def store_fetched(self, message: discord.Message) -> bool:
        """Store a message read back from Discord's history (catch-up) exactly as a live one, never answering it:
        a question asked while the bot was away is old news by now. False when it is not stored."""
        if self._not_speech(message):
            return False
        text, _ = self._addressed(message)
        return await self._store(message, text)

    def _not_speech(self, message: discord.Message) -> bool:
        assert self.bot.user is not None
        # Direct messages are not stored; the bot stores its replies itself, with their sources; system notices
        # are not speech.
        return message.guild is None or message.author.id == self.bot.user.id or message.is_system()

    def _addressed(self, message: discord.Message) -> tuple[str | None, discord.Message | None]:
        """What the message asks the bot (None: not addressed to it), and the message it replies to."""
        assert self.bot.user is not None
        replied = _replied_message(message)
        text = address(
            message.content,
            bot_user_id=self.bot.user.id,
            bot_name=self.bot.settings.bot_name,
            replied_to_bot=replied is not None and replied.author.id == self.bot.user.id,
        )
        return text, replied

    async def _store(self, message: discord.Message, text: str | None) -> bool:
        assert message.guild is not None
        private, parent_id, channel_type = channel_scope(message.channel, message.guild.default_role)
        await self.intake.channel(
            message.guild.id, message.channel.id, is_private=private, parent_id=parent_id, channel_type=channel_type
        )
        content = speech_of(message)
        if not content or (message.author.bot and not self.bot.settings.ingest_other_bots):
            return False
        return await self.intake.message(incoming(message, kind=stored_kind(text), content=content))

    def _request(self, message: discord.Message, text: str, replied: discord.Message | None) -> Request:
        assert message.guild is not None and self.bot.user is not None
        return Request(
            guild_id=message.guild.id,
            author_id=message.author.id,
            text=text,
            reply_to_author_id=replied.author.id if replied else None,
            reply_to_text=replied.content if replied else None,
            channel_id=message.channel.id,
            message_id=message.id,
            mentioned_user_ids=tuple(u.id for u in message.mentions if u.id != self.bot.user.id),
            bot_user_id=self.bot.user.id,
        )

    async def _answer(self, message: discord.Message, request: Request) -> None:
        is_admin = isinstance(message.author, discord.Member) and message.author.guild_permissions.manage_guild
        answer: Answer | None = None
        try:
            # Typing shows while the model thinks; the reply comes within REPLY_DEADLINE_SECONDS regardless, and
            # a facts change that outlives it is sent as a follow-up reply when done.
            async with typing_meanwhile(message.channel):
                answer = await self.bot.responder.respond_within(
                    request,
                    deadline=time_left(message, self.bot.settings.reply_deadline_seconds),
                    is_admin=is_admin,
                    on_late=lambda late: self._deliver(message, late.text, late),
                )
            text = answer.text
        except Exception:
            log.exception("answering message %s failed", message.id)
            text = APOLOGY
        await self._deliver(message, text, answer)

    async def _deliver(self, message: discord.Message, text: str, answer: Answer | None) -> None:
        """Send a reply (split at Discord's limit) and store it with whose data it carries."""
        for sent in await self._send(message, text):
            if answer is not None:
                await self.intake.reply(
                    incoming(sent, kind=Kind.BOT, content=sent.content),
                    members=answer.members,
                    messages=answer.quoted,
                )

    async def _send(self, message: discord.Message, text: str) -> list[discord.Message]:
        none = discord.AllowedMentions.none()
        sent: list[discord.Message] = []
        for index, chunk in enumerate(split_message(defuse(text))):
            try:
                if index == 0:
                    sent.append(await message.reply(chunk, mention_author=False, allowed_mentions=none))
                else:
                    sent.append(await message.channel.send(chunk, allowed_mentions=none))
            except discord.HTTPException:
                log.exception("sending a reply to message %s failed", message.id)
                break
        return sent

    @commands.Cog.listener()
    async def on_member_update(self, before: discord.Member, after: discord.Member) -> None:
        """Keep member_names current when someone changes their nickname or name."""
        if (before.display_name, before.name) != (after.display_name, after.name):
            await self.intake.member(after.guild.id, after.id, after.display_name, after.name)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        """Keep the stored text current (raw: uncached messages count too)."""
        if payload.guild_id is None:
            return
        edited = payload.message
        if edited.edited_at is not None:
            await self.intake.edit(payload.message_id, speech_of(edited), edited.edited_at)

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        """Deleted in Discord means deleted here."""
        if payload.guild_id is not None:
            await self.intake.delete([payload.message_id])

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        """Bulk deletes (moderation purges) too."""
        if payload.guild_id is not None:
            await self.intake.delete(payload.message_ids)


@contextlib.asynccontextmanager
async def typing_meanwhile(channel: discord.abc.Messageable) -> AsyncIterator[None]:
    """Discord's typing indicator while the body runs, without waiting for it: `channel.typing()` awaits its first
    request (a REST round trip, or a rate limit's whole wait) before its body begins. It starts after
    TYPING_AFTER_SECONDS (a quick answer needs none), and a first request under way when the body ends is given
    TYPING_SETTLE_SECONDS to land before the reply is sent: landing after it, it would show the bot typing for ten
    seconds after its answer. An indicator that fails (no permission, Discord away) is only logged."""
    asked, shown = asyncio.Event(), asyncio.Event()

    async def typing() -> None:
        await asyncio.sleep(TYPING_AFTER_SECONDS)
        asked.set()
        try:
            async with channel.typing():
                shown.set()
                await asyncio.Event().wait()  # until cancelled: discord.py renews the indicator meanwhile
        except discord.HTTPException as error:
            log.info("the typing indicator failed (%s %s); the reply goes on", error.status, error.code)

    indicator = spawn(typing(), name="typing indicator")
    try:
        yield
    finally:
        if asked.is_set():  # the reply goes out after that anyway
            await set_or_done(shown, indicator, within=TYPING_SETTLE_SECONDS)
        indicator.cancel()


def _reply_reference(message: discord.Message) -> discord.MessageReference | None:
    """The message this one replies to; a forward's reference points at what it copied, which it is not replying to."""
    reference = message.reference
    return reference if reference is not None and reference.type is discord.MessageReferenceType.default else None


def _replied_message(message: discord.Message) -> discord.Message | None:
    reference = _reply_reference(message)
    if reference is None:
        return None
    resolved = reference.resolved or reference.cached_message
    return resolved if isinstance(resolved, discord.Message) else None


def time_left(message: discord.Message, deadline: float) -> float:
    """The deadline counts from when the member sent the message (its snowflake's time), not from when this process
    got to it: a busy event loop that started the reply late answers sooner, with less, instead of late. At most half
    of it is taken away, so a clock that runs ahead of Discord's cannot leave a reply no time at all."""
    waited = (discord.utils.utcnow() - message.created_at).total_seconds()
    return deadline - min(max(waited, 0.0), deadline / 2)
