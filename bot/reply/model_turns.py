"""The LLM-backed halves of a conversation: routing what the fast path could not, and chatting."""

from __future__ import annotations

from dataclasses import replace

from bot.llm.client import LLM
from bot.llm.prompts import transcript, when
from bot.llm.schemas import RouteDecision
from bot.memory.directory import Directory
from bot.reply.routing import Decision, Request, Route
from bot.settings import Settings
from bot.text import MENTION


class ModelTurns:
    """Routes with the `route` prompt and answers with the `chat` prompt; the time and zone are the guild's."""

    def __init__(self, llm: LLM, directory: Directory, settings: Settings) -> None:
        self._llm = llm
        self._directory = directory  # names and the guild's clock: all a model turn needs of memory
        self._settings = settings

    def _when(self, guild_id: int) -> dict[str, str]:
        return when(self._directory.now(), self._directory.zone(guild_id))

    async def route(self, request: Request) -> Decision:
        """Ask the model what the message wants (any language); subjects are resolved like the fast path."""
        if self._llm.is_offline:
            return Decision(Route.CHAT)
        author = await self._directory.name(request.guild_id, request.author_id)
        result = await self._llm.run(
            "route",
            {
                "bot_name": self._settings.bot_name,
                "author": author,
                "message": request.text,
                **self._when(request.guild_id),
            },
            schema=RouteDecision,
            temperature=0,
            guild_id=request.guild_id,
        )
        decision: RouteDecision = result.parsed
        route = Route(decision.route)
        if route not in {Route.REMEMBER, Route.FORGET, Route.ABOUT}:
            return Decision(route)
        return await self._with_subject(request, route, (decision.subject or "").strip(), decision.fact)

    async def _with_subject(self, request: Request, route: Route, subject: str, fact: str | None) -> Decision:
        """A facts or about route with the member it names resolved as the fast path resolves it."""
        fact = fact if route is not Route.ABOUT else None
        if not subject or subject.casefold() in {"me", "myself", "i"}:
            return Decision(route, request.author_id, fact)
        if mention := MENTION.fullmatch(subject):
            return Decision(route, int(mention.group(1)), fact)
        found = await self._directory.resolve(request.guild_id, subject)
        if len(found) == 1:
            return Decision(route, found[0], fact)
        if route is Route.ABOUT and not found:
            return Decision(Route.RECALL)  # about someone or something no member is: what was said about it
        return Decision(route, None, fact, tuple(found), None if found else subject)

    async def chat(self, request: Request, memory: str | None) -> str:
        """A reply in the bot's voice, with what it remembers about the author."""
        author = await self._directory.name(request.guild_id, request.author_id)
        # The bot is no member: its mention would read "@member 1234" to the model, in most lines of a chat.
        bot = {request.bot_user_id: self._settings.bot_name} if request.bot_user_id is not None else {}
        lines = []
        if request.channel_id is not None:
            # Only this channel's own conversation: a private channel's talk never leaves it.
            lines = self._directory.channel_lines(
                request.guild_id,
                request.channel_id,
                budget_tokens=self._settings.chat_window_tokens,
                before=request.message_id,
            )
        # The window and the message with one lookup of the names they mention.
        *window, message = await self._directory.render_all_mentions(
            request.guild_id, [*(line.content for line in lines), request.text], also=bot
        )
        lines = [replace(line, content=content) for line, content in zip(lines, window, strict=True)]
        result = await self._llm.run(
            "chat",
            {
                "bot_name": self._settings.bot_name,
                **self._when(request.guild_id),
                "author": author,
                "memory": memory or "",
                "channel_xml": transcript(lines),
                "message": message,
            },
            guild_id=request.guild_id,
        )
        return result.text
