"""Turns a routed request into the bot's answer: facts operations, what-do-you-know, recall, recaps and chat.

Front ends (Discord, console, tests) call `Responder.respond_within`, which answers within a deadline whatever
the model does (bot/reply/deadline.py), or `respond`; it knows nothing about discord.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from bot.faults import Fault
from bot.lifecycle import abandon, set_or_done
from bot.memory.assembly import Asked, Remembered
from bot.memory.directory import Directory
from bot.memory.facts.face import Facts
from bot.memory.recall import Found
from bot.memory.recollection import Recollection
from bot.reply import cite, recap
from bot.reply.deadline import Answer, ReplyDeadline, under_way
from bot.reply.routing import Decision, Request, Route, asks, fast_route, third_person

log = logging.getLogger(__name__)

NOT_ABOUT_ME = (
    "That's something I said, and I only keep facts about the people here. Say whom it is about, e.g. "
    "“remember this about @Ana”, or write the fact yourself."
)
Router = Callable[[Request], Awaitable[Decision]]
Chatter = Callable[[Request, str | None], Awaitable[str]]


class Responder:
    """Routes a request (fast path first, then the LLM router) and carries it out."""

    def __init__(
        self,
        facts: Facts,
        recollection: Recollection,
        directory: Directory,
        *,
        router: Router | None,
        chatter: Chatter,
        policy: str,
        recall_chatter: Chatter | None = None,
        storage: Fault | None = None,
    ) -> None:
        # Only the faces a reply uses (bot/memory/manager.py hands them out), never the manager.
        self._facts, self._recollection, self._directory = facts, recollection, directory
        self._router = router
        self._chatter = chatter
        self._policy = policy
        self._recall_chatter = recall_chatter  # None (no model): recall answers list what was found
        self.deadline = ReplyDeadline(self.respond, facts, directory, recollection=recollection, storage=storage)
        # What front ends call: `respond`, answered within a deadline whatever the model does; and at shutdown,
        # the wait for facts changes still finishing after one.
        self.respond_within = self.deadline.respond_within
        self.drain = self.deadline.drain

    async def respond(self, request: Request, *, is_admin: bool = False) -> Answer:
        """Answer one message addressed to the bot."""
        # Background embedding waits meanwhile: on two cores a batch running beside a reply cost it ~3 ms p50
        # (bench.reply, model at 0 ms), and a vector can wait a second.
        async with self._recollection.under_way():
            await self._recollection.follow_others()
            answer = await self._respond(request, is_admin)
        return replace(answer, members=answer.members | {request.author_id})

    async def _respond(self, request: Request, is_admin: bool) -> Answer:
        decision = await fast_route(request, self._directory)
        if decision is None and self._router is None and asks(request.text):
            decision = Decision(Route.RECALL)  # no model to tell: a question goes to what was said
        found: asyncio.Future[Found] | None = None
        if decision is None and self._router is not None:
            # Both routes a routed message usually takes (chat, a question) recall the same way, from one search:
            # it starts now, so a model's routing time hides it; any other route drops it. Summaries are searched
            # after routing (they only fill what the messages leave of the budget).
            encoding = asyncio.Event()
            found = asyncio.ensure_future(
                self._recollection.search(
                    request.guild_id, request.text, channel_id=request.channel_id, summaries=False, encoding=encoding
                )
            )
            try:
                # The search sends its first statement and hands the question to the encoder (a thread) before
                # the router builds its request: ~1.5 ms of CPU that would otherwise come first.
                await set_or_done(encoding, found, within=HAND_OFF_SECONDS)
                decision = await self._router(request)
            except BaseException:
                _drop(found)
                raise
        decision = decision or Decision(Route.CHAT)
        if found is not None and decision.route not in {Route.CHAT, Route.RECALL}:
            _drop(found)
            found = None
        if decision.needs_subject:
            return Answer(await self._which_one(request, decision), decision.route)
        if decision.route in {Route.REMEMBER, Route.FORGET}:
            if refusal := self._refusal(request, decision, is_admin):
                return Answer(refusal, decision.route)
            return await self._change_facts(request, decision)
        if decision.route in {Route.ABOUT, Route.RECAP}:
            return await self._tell(request, decision)
        # What the model receives from memory, whatever the route: routing chooses the form of the answer, never
        # how much is remembered.
        remembered = await self._recollection.for_reply(asked(request), found=found)
        if decision.route is Route.RECALL:
            return await self._recall(request, remembered)
        reply = await self._chatter(request, remembered.text)
        return Answer(reply, Route.CHAT, members=remembered.members, quoted=remembered.quoted)

    async def _recall(self, request: Request, remembered: Remembered) -> Answer:
        """Answer a question about the past from what was found (with a model), always citing date, author and
        link of what recall ranked first."""
        now = self._directory.now()
        recalled = remembered.recalled
        hits = cite.bearing(recalled.hits)
        if not hits:
            return Answer("I couldn't find anything about that in what I've kept from this server.", Route.RECALL)
        sources = await cite.cite(self._directory, hits, now)
        members, quoted = remembered.members, remembered.quoted
        listed = "\n".join(f"• {line}" for line in sources)
        if self._recall_chatter is None:
            return Answer(f"Here is what I found:\n{listed}", Route.RECALL, members=members, quoted=quoted)
        under_way(found=Answer(listed, Route.RECALL, members=members, quoted=quoted))  # if the model is slow
        reply = await self._recall_chatter(request, remembered.text)
        text = f"{reply}\n\nSources:\n" + "\n".join(f"• {line}" for line in sources)
        return Answer(text, Route.RECALL, members=members, quoted=quoted)

    async def _tell(self, request: Request, decision: Decision) -> Answer:
        """What memory holds about someone (about), or what a span held (a recap: not about the asker)."""
        if decision.route is Route.RECAP:
            return await recap.recap(self._recollection, self._directory, request)
        subject = decision.subject_id
        assert subject is not None
        return Answer(await self._about(request, subject), Route.ABOUT, members=frozenset({subject}))

    def _refusal(self, request: Request, decision: Decision, is_admin: bool) -> str | None:
        """Why a facts change may not happen, or None."""
        if decision.subject_id is not None and decision.subject_id == request.bot_user_id:
            return NOT_ABOUT_ME
        if self._policy == "anyone" or is_admin or decision.subject_id == request.author_id:
            return None
        return "Only the person themselves or an admin can change what I remember about someone."

    async def _change_facts(self, request: Request, decision: Decision) -> Answer:
        if not (decision.fact or "").strip():
            return Answer("What should I remember? Try: remember that Ana is vegetarian.", decision.route)
        under_way(committing=decision)  # from here on the change must finish, even past the reply deadline
        subject_id = decision.subject_id
        assert subject_id is not None
        name = await self._directory.name(request.guild_id, subject_id)
        fact = await self._directory.render_mentions(request.guild_id, decision.fact or "", at=False)
        # Facts are kept in the third person: "I" and "my" mean whoever wrote the words.
        speaker_id = decision.speaker_id or request.author_id
        fact = third_person(
            fact, name if speaker_id == subject_id else await self._directory.name(request.guild_id, speaker_id)
        )
        about = frozenset({subject_id})
        if decision.route is Route.REMEMBER:
            change = await self._facts.remember(request.guild_id, subject_id, fact, requested_by=request.author_id)
            stored = await self._directory.render_mentions(request.guild_id, change.after, at=False)
            return Answer(f"Got it. What I know about {name} now:\n{stored}", Route.REMEMBER, change, members=about)
        change = await self._facts.forget(request.guild_id, subject_id, fact, requested_by=request.author_id)
        if not change.found:
            return Answer(f"I had nothing like that about {name}, so nothing changed.", Route.FORGET, change)
        remaining = await self._directory.render_mentions(request.guild_id, change.after, at=False) or "nothing"
        n = change.redacted
        where = (
            f" I also removed it from {n} stored message{'s' if n != 1 else ''} and summaries that said it."
            if n
            else ""
        )
        return Answer(
            f"Done, I forgot that.{where} What I still know about {name}: {remaining}",
            Route.FORGET,
            change,
            members=about,
        )

    async def _about(self, request: Request, subject_id: int) -> str:
        name = await self._directory.name(request.guild_id, subject_id)
        known = await self._recollection.describe(request.guild_id, subject_id)
        if not known:
            return f"I don't know anything about {name} yet."
        return f"What I know about {name}:\n{known}"

    async def _which_one(self, request: Request, decision: Decision) -> str:
        if decision.candidates:
            names = await self._directory.display_names(request.guild_id, set(decision.candidates))
            listed = ", ".join(f"{names.get(c, 'someone')} (…{str(c)[-4:]})" for c in decision.candidates)
            return f"Several people here go by that name: {listed}. Mention the one you mean with @."
        if decision.unknown_name:
            return (
                f"I don't know anyone called {decision.unknown_name} here yet. "
                "Mention them with @ so I know who you mean."
            )
        return "Who is that about? Mention them with @, or say “I” / “me” if it is about you."


def asked(request: Request) -> Asked:
    """The message a request is, as memory's assembly reads it."""
    return Asked(
        request.guild_id,
        request.author_id,
        request.text,
        channel_id=request.channel_id,
        mentioned=tuple(request.mentioned_user_ids),
        message_id=request.message_id,
    )


# The most the router waits for the search to hand its question to the encoder (reading the question may wait on a
# slow database: the router does not).
HAND_OFF_SECONDS = 0.005


def _drop(found: asyncio.Future[Found]) -> None:
    """A search begun for a route the message did not take: stop it (an error it met is logged, not lost)."""
    abandon(found, name="unneeded recall search")
