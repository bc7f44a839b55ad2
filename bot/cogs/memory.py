"""`/memory`: what the bot keeps about you — see it, export it, stop it, delete it — and a recap of what you
missed. Every answer is private.

Admins (Manage Server) may also look at other members with `show`, `export` and `history`; everything
that changes other people's memory lives in `/memory-admin`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.cogs.replies import Confirm, answer, markdown_file, self_or_admin
from bot.memory.admin import rows_in_words
from bot.memory.recap.span import named_span
from bot.reply.routing import Request, Route

if TYPE_CHECKING:
    from bot.discord_bot import ElefantBot
    from bot.memory.facts.store import Revision

REVISIONS_SHOWN = 15
SINCE_EXAMPLES = "friday, yesterday, 3 days, 14:00 or 2026-11-10"


def revision_lines(revisions: list[Revision], names: dict[int, str], texts: list[str]) -> list[str]:
    """One line per revision (its text with names rendered), newest first, each short enough to scan."""
    lines = []
    for r, full in zip(revisions, texts, strict=True):
        who = names.get(r.requested_by, "a deleted member") if r.requested_by else "a deleted member"
        text = full if len(full) <= 160 else full[:157] + "…"
        lines.append(f"`#{r.id}` {r.at:%Y-%m-%d %H:%M} UTC · {r.op} · asked by {who}: {text or '*(empty)*'}")
    return lines


@app_commands.guild_only()
class MemoryCommands(commands.GroupCog, group_name="memory", group_description="What Elefant remembers about you"):
    """The member-facing group: anyone may use it on themselves."""

    def __init__(self, bot: ElefantBot) -> None:
        self.bot = bot
        # Only the faces these commands use (bot/memory/manager.py hands them out).
        self._admin = bot.memory.admin
        self._facts = bot.memory.facts
        self._directory = bot.memory.directory
        self._recollection = bot.memory.recollection
        super().__init__()

    async def _subject(
        self, interaction: discord.Interaction, user: discord.Member | None
    ) -> tuple[int, discord.abc.User]:
        """The guild, and whom the command is about (yourself; anyone for an admin); the answer comes later."""
        assert interaction.guild_id is not None
        subject = self_or_admin(interaction, user)
        # Discord waits 3 s for a first answer; the database (or the model, for a context) may not.
        await interaction.response.defer(ephemeral=True, thinking=True)
        return interaction.guild_id, subject

    @app_commands.command(name="show", description="What I know about you (admins: about anyone)")
    @app_commands.describe(user="Admins only: someone else")
    async def show(self, interaction: discord.Interaction, user: discord.Member | None = None) -> None:
        """Facts, then the context the bot would use now (which may need the model: defer first)."""
        guild_id, subject = await self._subject(interaction, user)
        facts = await self._facts.get(guild_id, subject.id)
        context = await self._recollection.describe(guild_id, subject.id, patient=True)
        if facts is None and context is None:
            await answer(interaction, f"I don't remember anything about {subject.display_name} here yet.")
            return
        facts_text = await self._directory.render_mentions(guild_id, facts, at=False) if facts else None
        await answer(
            interaction,
            f"**Facts about {subject.display_name}**\n{facts_text or '*none*'}\n\n"
            f"**What I would use when talking with them now**\n{context or '*nothing*'}",
        )

    @app_commands.command(name="history", description="Every change to the facts about you (admins: about anyone)")
    @app_commands.describe(user="Admins only: someone else")
    async def history(self, interaction: discord.Interaction, user: discord.Member | None = None) -> None:
        """The newest revisions; `/memory-admin revert` takes their numbers."""
        guild_id, subject = await self._subject(interaction, user)
        revisions = await self._facts.history(guild_id, subject.id, limit=REVISIONS_SHOWN)
        if not revisions:
            await answer(interaction, f"No facts about {subject.display_name} have been stored or changed here.")
            return
        names = await self._directory.display_names(guild_id, {r.requested_by for r in revisions})
        texts = [await self._directory.render_mentions(guild_id, r.new_blob, at=False) for r in revisions]
        header = f"**Changes to the facts about {subject.display_name}** (newest first)"
        await answer(interaction, "\n".join([header, *revision_lines(revisions, names, texts)]))

    @app_commands.command(name="export", description="Download what I keep about you as a Markdown file")
    @app_commands.describe(user="Admins only: someone else")
    async def export(self, interaction: discord.Interaction, user: discord.Member | None = None) -> None:
        """Facts, every revision and every summary about the member, as an attachment."""
        guild_id, subject = await self._subject(interaction, user)
        text = await self._admin.export(guild_id, subject.id)
        await answer(
            interaction,
            f"Here is everything I keep about {subject.display_name} in this server.",
            file=markdown_file(text, f"elefant-{guild_id}-{subject.id}.md"),
        )

    @app_commands.command(name="recap", description="What was said while you were away: the threads, with links")
    @app_commands.describe(
        channel="Only this channel (and its threads); by default the whole server",
        since=f"From when: {SINCE_EXAMPLES}; by default since you last spoke",
    )
    async def recap(
        self,
        interaction: discord.Interaction,
        channel: discord.TextChannel | discord.Thread | None = None,
        since: str | None = None,
    ) -> None:
        """The same recap as "Elefant, catch me up on #channel since …", privately, within the reply deadline."""
        assert interaction.guild_id is not None
        guild_id = interaction.guild_id
        when = _since(since)
        asked = " ".join(filter(None, (f"<#{channel.id}>" if channel else None, when)))
        if since is not None and named_span(when or "", self._directory.now(), self._directory.zone(guild_id)) is None:
            await answer(interaction, f"I couldn't read “{since}” as a time; try {SINCE_EXAMPLES}.")
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        request = Request(
            guild_id, interaction.user.id, asked or "what did I miss?", channel_id=interaction.channel_id,
            route=Route.RECAP,
        )  # fmt: skip
        # Under way until sent, as the listener holds a reply: what waits for the gap after it (bot/collector.py)
        # runs once the member has the answer.
        async with self._recollection.under_way():
            told = await self.bot.responder.respond_within(request, deadline=self.bot.settings.reply_deadline_seconds)
            await answer(interaction, told.text)

    @app_commands.command(name="optout", description="Stop storing your messages in this server")
    async def optout(self, interaction: discord.Interaction) -> None:
        """Stops at once; then offers to delete what is already stored."""
        assert interaction.guild_id is not None
        guild_id, user_id = interaction.guild_id, interaction.user.id
        await interaction.response.defer(ephemeral=True, thinking=True)
        await self._admin.opt_out(guild_id, user_id, delete_stored=False)

        async def delete_stored() -> str:
            counts = await self._admin.forget_member(guild_id, user_id)
            return f"Deleted {rows_in_words(counts)}. I no longer store your messages here (/memory optin undoes that)."

        view = Confirm(
            user_id,
            delete_stored,
            yes="Delete what you kept",
            no="Keep it",
            declined="Kept what was stored. New messages of yours are not stored (/memory optin undoes that).",
        )
        await answer(
            interaction,
            "From now on I don't store your messages in this server. Shall I also delete "
            "what I already keep about you (messages, facts, summaries)?",
            view=view,
        )

    @app_commands.command(name="optin", description="Store your messages again (after optout)")
    async def optin(self, interaction: discord.Interaction) -> None:
        """Reverses optout; nothing deleted comes back."""
        assert interaction.guild_id is not None
        await interaction.response.defer(ephemeral=True, thinking=True)
        await self._admin.opt_in(interaction.guild_id, interaction.user.id)
        await answer(interaction, "Welcome back: I store your messages in this server again.")

    @app_commands.command(name="forget-me", description="Delete everything I keep about you in this server")
    async def forget_me(self, interaction: discord.Interaction) -> None:
        """After a confirmation button: every table and cache; reports the rows deleted."""
        assert interaction.guild_id is not None
        guild_id, user_id = interaction.guild_id, interaction.user.id

        async def forget() -> str:
            counts = await self._admin.forget_member(guild_id, user_id)
            return (
                f"Done. Deleted {rows_in_words(counts)}. New messages will be remembered again; "
                "/memory optout stops that."
            )

        view = Confirm(user_id, forget, yes="Delete everything", no="Cancel")
        await answer(
            interaction,
            "This deletes your stored messages, the facts about you and their history, and "
            "the summaries about you in this server. It cannot be undone. Go ahead?",
            view=view,
        )


def _since(since: str | None) -> str | None:
    """The `since` option as a recap request says it ("friday" → "since friday")."""
    if since is None or not since.strip():
        return None
    text = " ".join(since.split())
    return text if text.casefold().startswith("since ") else f"since {text}"
