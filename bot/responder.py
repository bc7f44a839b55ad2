"""Turns a routed request into the bot's answer: facts operations, what-do-you-know, and chat.

Front ends (Discord, console, tests) call `Responder.respond`; it knows nothing about discord.py.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot import recalling
from bot.conversation import Decision, Request, Route, fast_route, third_person
from bot.memory.budget import Section, assemble
from bot.memory.facts import FactChange
from bot.memory.manager import MemoryManager
from bot.memory.names import MENTION

log = logging.getLogger(__name__)

Router = Callable[[Request], Awaitable[Decision]]
Chatter = Callable[[Request, str | None], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Answer:
    """What the bot says back, and what (if anything) it changed."""

    text: str
    route: Route
    change: FactChange | None = None


class Responder:
    """Routes a request (fast path first, then the LLM router) and carries it out."""

    def __init__(
        self,
        memory: MemoryManager,
        *,
        router: Router | None,
        chatter: Chatter,
        policy: str,
        recall_chatter: Chatter | None = None,
    ) -> None:
        self._memory = memory
        self._router = router
        self._chatter = chatter
        self._policy = policy
        self._recall_chatter = recall_chatter  # None (no model): recall answers list what was found

    async def respond(self, request: Request, *, is_admin: bool = False) -> Answer:
        """Answer one message addressed to the bot."""
        decision = await fast_route(request, self._memory.names)
        if decision is None:
            decision = await self._router(request) if self._router else Decision(Route.CHAT)
        if decision.needs_subject:
            return Answer(await self._which_one(request, decision), decision.route)
        if decision.route in {Route.REMEMBER, Route.FORGET}:
            if not self._allowed(request, decision, is_admin):
                return Answer(
                    "Only the person themselves or an admin can change what I remember about someone.", decision.route
                )
            return await self._change_facts(request, decision)
        if decision.route is Route.ABOUT:
            return Answer(await self._about(request, decision.subject_id), Route.ABOUT)  # type: ignore[arg-type]
        if decision.route is Route.RECALL:
            return Answer(await self._recall(request), Route.RECALL)
        return Answer(await self._chatter(request, await self._chat_memory(request)), Route.CHAT)

    async def _chat_memory(self, request: Request) -> str | None:
        """The author's context, plus the facts of everyone the message mentions."""
        parts = []
        if mine := await self._memory.get_memories(request.guild_id, request.author_id):
            parts.append(mine)
        mentioned = {int(m) for m in MENTION.findall(request.text)} | set(request.mentioned_user_ids)
        for user_id in sorted(mentioned - {request.author_id}):
            if facts := await self._memory.facts(request.guild_id, user_id):
                name = await self._memory.names.name(request.guild_id, user_id)
                parts.append(f"About {name}: {facts}")
        return "\n".join(parts) or None

    async def _recall(self, request: Request) -> str:
        """Search the past; with a model, answer from what was found; always cite date, author and link."""
        now = self._memory.clock.now()
        hits = await recalling.find(self._memory, request, now=now)
        if not hits:
            return "I couldn't find anything about that in what I've kept from this server."
        sources = [await recalling.cite(self._memory, hit, now) for hit in hits]
        listed = "\n".join(f"• {line}" for line in sources)
        if self._recall_chatter is None:
            return f"Here is what I found:\n{listed}"
        known = await self._memory.facts(request.guild_id, request.author_id) or ""
        memory = assemble(
            [Section("Facts", known, guaranteed=True), Section("Recalled", items=sources, share=1.0)],
            self._memory.settings.context_token_budget,
        )
        reply = await self._recall_chatter(request, memory)
        return f"{reply}\n\nSources:\n" + "\n".join(f"• {line}" for line in sources[:3])

    def _allowed(self, request: Request, decision: Decision, is_admin: bool) -> bool:
        return self._policy == "anyone" or is_admin or decision.subject_id == request.author_id

    async def _change_facts(self, request: Request, decision: Decision) -> Answer:
        if not (decision.fact or "").strip():
            return Answer("What should I remember? Try: remember that Ana is vegetarian.", decision.route)
        subject_id = decision.subject_id
        assert subject_id is not None
        names = self._memory.names
        name = await names.name(request.guild_id, subject_id)
        fact = await names.render_mentions(request.guild_id, decision.fact or "", at=False)
        # Facts are kept in the third person: "I" and "my" mean whoever wrote the words.
        speaker_id = decision.speaker_id or request.author_id
        fact = third_person(fact, name if speaker_id == subject_id else await names.name(request.guild_id, speaker_id))
        if decision.route is Route.REMEMBER:
            change = await self._memory.remember(request.guild_id, subject_id, fact, requested_by=request.author_id)
            stored = await names.render_mentions(request.guild_id, change.after, at=False)
            return Answer(f"Got it. What I know about {name} now:\n{stored}", Route.REMEMBER, change)
        change = await self._memory.forget(request.guild_id, subject_id, fact, requested_by=request.author_id)
        if not change.found:
            return Answer(f"I had nothing like that about {name}, so nothing changed.", Route.FORGET, change)
        remaining = change.after or "nothing"
        return Answer(f"Done, I forgot that. What I still know about {name}: {remaining}", Route.FORGET, change)

    async def _about(self, request: Request, subject_id: int) -> str:
        name = await self._memory.names.name(request.guild_id, subject_id)
        known = await self._memory.describe(request.guild_id, subject_id)
        if not known:
            return f"I don't know anything about {name} yet."
        return f"What I know about {name}:\n{known}"

    async def _which_one(self, request: Request, decision: Decision) -> str:
        if decision.candidates:
            names = await self._memory.names.names(request.guild_id, set(decision.candidates))
            listed = ", ".join(f"{names.get(c, 'someone')} (…{str(c)[-4:]})" for c in decision.candidates)
            return f"Several people here go by that name: {listed}. Mention the one you mean with @."
        if decision.unknown_name:
            return (
                f"I don't know anyone called {decision.unknown_name} here yet. "
                "Mention them with @ so I know who you mean."
            )
        return "Who is that about? Mention them with @, or say “I” / “me” if it is about you."
