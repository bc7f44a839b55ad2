"""What the /memory command groups share: private answers, the admin rule, confirmation buttons, errors."""

from __future__ import annotations

import io
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import app_commands

from bot.sending import defuse, split_message

log = logging.getLogger(__name__)
NOBODY = discord.AllowedMentions.none()  # on every answer, question and edit: nothing the bot says pings
NOT_ADMIN = "You need the **Manage Server** permission for that."
CONFIRM_SECONDS = 120


class NotAllowedError(app_commands.CheckFailure):
    """A member asked for something only admins (or the member themself) may do; the text says why."""


def is_admin(interaction: discord.Interaction) -> bool:
    """Manage Server in this channel, as Discord resolved it for this interaction."""
    return interaction.permissions.manage_guild


def require_admin(interaction: discord.Interaction) -> bool:
    """Discord's default_permissions only hides commands; this refuses at run time."""
    if not is_admin(interaction):
        raise NotAllowedError(NOT_ADMIN)
    return True


def self_or_admin(interaction: discord.Interaction, member: discord.abc.User | None) -> discord.abc.User:
    """The member a command is about: yourself, or anyone when you manage the server."""
    if member is None or member.id == interaction.user.id:
        return interaction.user
    if not is_admin(interaction):
        raise NotAllowedError(
            "You can only look at your own memory; seeing other members' needs the **Manage Server** permission."
        )
    return member


async def answer(
    interaction: discord.Interaction,
    text: str,
    *,
    file: discord.File | None = None,
    view: discord.ui.View | None = None,
) -> None:
    """Answer privately (ephemeral), nothing pinging, split at Discord's limit; works before and after defer."""
    chunks = split_message(defuse(text)) or ["(nothing)"]
    for index, chunk in enumerate(chunks):
        last = index == len(chunks) - 1
        extra: dict[str, Any] = {}
        if last and file is not None:
            extra["file"] = file
        if last and view is not None:
            extra["view"] = view
        shown: discord.WebhookMessage | discord.InteractionMessage | None = None
        if interaction.response.is_done():
            shown = await interaction.followup.send(chunk, ephemeral=True, allowed_mentions=NOBODY, wait=True, **extra)
        else:
            await interaction.response.send_message(chunk, ephemeral=True, allowed_mentions=NOBODY, **extra)
            if last and isinstance(view, Confirm):
                shown = await interaction.original_response()
        if last and isinstance(view, Confirm) and shown is not None:
            view.shown(shown, chunk)  # so the question can say it expired


def markdown_file(text: str, filename: str) -> discord.File:
    """A text attachment (exports are files: they can be long, and members keep them)."""
    return discord.File(io.BytesIO(text.encode()), filename=filename)


class Confirm(discord.ui.View):
    """A yes / no question; only the member who asked may answer; `action` runs at most once."""

    def __init__(
        self,
        owner_id: int,
        action: Callable[[], Awaitable[str]],
        *,
        yes: str,
        no: str,
        declined: str = "Cancelled: nothing was changed.",
    ) -> None:
        super().__init__(timeout=CONFIRM_SECONDS)
        self._owner_id = owner_id
        self._action = action
        self._declined = declined
        self.confirm.label, self.cancel.label = yes, no
        self._message: discord.WebhookMessage | discord.InteractionMessage | None = None
        self._question = ""

    def shown(self, message: discord.WebhookMessage | discord.InteractionMessage, question: str) -> None:
        """The message the question went out in (editable with the interaction's token for 15 minutes)."""
        self._message, self._question = message, question

    async def on_timeout(self) -> None:
        """Nobody answered: grey the buttons out and say that nothing happened."""
        for item in self.children:
            if isinstance(item, discord.ui.Button):
                item.disabled = True
        if self._message is None:
            return
        expired = f"{self._question}\n\n**No answer within {_duration(CONFIRM_SECONDS)}, so nothing was changed.**"
        try:
            await self._message.edit(content=expired[:2000], view=self, allowed_mentions=NOBODY)
        except discord.HTTPException:
            log.info("could not mark an expired question as expired (the member may have dismissed it)")

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """Ephemeral messages are private anyway; this keeps shared ones safe too."""
        if interaction.user.id != self._owner_id:
            await interaction.response.send_message(
                "This question is not for you.", ephemeral=True, allowed_mentions=NOBODY
            )
            return False
        return True

    @discord.ui.button(label="Yes", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction, _: discord.ui.Button[Confirm]) -> None:
        """Run the action; deleting much can take a while, so say so first, then show the outcome."""
        self.stop()
        await interaction.response.edit_message(content="Working on it…", view=None, allowed_mentions=NOBODY)
        try:
            outcome = await self._action()
        except Exception:
            log.exception("a confirmed action failed")
            outcome = "Sorry, that failed and nothing was changed. Please try again in a moment."
        await interaction.edit_original_response(content=defuse(outcome)[:2000], allowed_mentions=NOBODY)

    @discord.ui.button(label="No", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, _: discord.ui.Button[Confirm]) -> None:
        """Change nothing."""
        self.stop()
        await interaction.response.edit_message(content=self._declined, view=None, allowed_mentions=NOBODY)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} seconds"


async def on_app_command_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
    """Refusals are explained; anything else is logged and apologised for, never a silent failure."""
    if isinstance(error, app_commands.CheckFailure):
        text = str(error) if isinstance(error, NotAllowedError) else NOT_ADMIN
        if isinstance(error, app_commands.NoPrivateMessage):
            text = "Memory commands work inside a server."
    else:
        log.error("slash command %s failed", interaction.command and interaction.command.qualified_name, exc_info=error)
        text = "Sorry, something went wrong on my side. Please try again in a moment."
    try:
        await answer(interaction, text)
    except discord.HTTPException:
        log.warning("could not tell the member that a command failed")
