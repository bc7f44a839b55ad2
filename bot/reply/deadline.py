"""The reply deadline: whatever the model does, a front end has an answer within it.

Front ends call `Responder.respond_within`, which runs the answer here. In time: the answer itself. Late: the
facts (and what recall found) with one honest sentence. What must finish (a facts change) finishes in the
background and is reported when done; the rest is cancelled. The answer notes how far it got (`under_way`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bot.answer_due import answer_by
from bot.faults import Fault, storage_trouble
from bot.lifecycle import keep, spawn
from bot.reply.routing import Decision, Request, Route

if TYPE_CHECKING:
    from bot.memory.directory import Directory
    from bot.memory.facts.face import Facts
    from bot.memory.facts.store import FactChange
    from bot.memory.recollection import Recollection

log = logging.getLogger(__name__)

SLOW = "The model is slow right now"
AWAY = "I can't reach my memory store right now"
NOTHING_DONE = "so I can't look anything up or change what I know"
SOURCE = "reply"
FALLBACK_READ_SECONDS = 0.5  # the slow answer's own reads (facts are cached) may not hold the reply either


@dataclass(frozen=True, slots=True)
class Answer:
    """What the bot says back, what (if anything) it changed, and whose data and which messages it used."""

    text: str
    route: Route
    change: FactChange | None = None
    members: frozenset[int] = frozenset()  # whose facts, context or messages the answer carries
    quoted: frozenset[int] = frozenset()  # stored messages it quotes (recall)


LateAnswer = Callable[[Answer], Awaitable[None]]
ReplyObserver = Callable[[Route, float, bool], None]  # the answer's route, its seconds, whether the deadline passed


class ReplyDeadline:
    """Answers within a deadline; lets a facts change that outlives it finish, and reports it."""

    def __init__(
        self,
        respond: Callable[..., Awaitable[Answer]],
        facts: Facts,
        directory: Directory,
        *,
        recollection: Recollection | None = None,
        storage: Fault | None = None,
    ) -> None:
        self._respond = respond  # Responder.respond
        self._facts, self._directory = facts, directory
        self._recollection = recollection  # what is still in mind without the database (a storage outage)
        self._storage = storage or Fault("storage")
        self._lateness = Fault("replies", logger=log, down_word="late", back_word="in time again")
        self._reports: dict[tuple[int, int], list[str]] = {}  # late results not yet told
        self._late: set[asyncio.Task[None]] = set()
        self._observers: list[ReplyObserver] = []

    def observe(self, observer: ReplyObserver) -> None:
        """Tell `observer` about every answer given: its route, how long it took, and if the deadline passed."""
        self._observers.append(observer)

    @property
    def finishing(self) -> bool:
        """Whether a facts change that passed its deadline is still finishing."""
        return bool(self._late)

    async def respond_within(
        self,
        request: Request,
        *,
        deadline: float,
        is_admin: bool = False,
        on_late: LateAnswer | None = None,
    ) -> Answer:
        """The answer to `request`, within `deadline` seconds whatever the model does.

        In time: the answer itself. Late: the facts (and what recall found) with one honest sentence. A facts
        change that had begun goes on in the background; when it is done `on_late` gets its answer (Discord
        sends it as a follow-up), or, without `on_late` or if that fails, it opens the member's next reply.
        """
        started = time.perf_counter()
        progress = _Progress()
        late = False
        task = asyncio.create_task(self._tracked(request, is_admin, progress, deadline), name="elefant-reply")
        try:
            done, _ = await asyncio.wait({task}, timeout=deadline)
        except asyncio.CancelledError:  # the front end gave up (shutdown): same rule as a passed deadline
            if progress.committing is None:
                task.cancel()
            else:
                self._finish_late(task, request, None)
            raise
        if task in done:
            answer = await self._result(task, request)
            self._lateness.ok(SOURCE)
        else:
            late = True
            if progress.committing is not None:
                self._finish_late(task, request, on_late)
            else:
                task.cancel()  # nothing must finish: free the model's slots for answers still wanted
                keep(task, name="cancelled reply")
            # One line when replies start passing the deadline, at most one a minute while they do, one when they
            # are in time again: in a burst against a slow model a line per reply was the flood.
            log.debug("reply to message %s passed the %.1f s deadline", request.message_id, deadline)
            self._lateness.failed(f"the {deadline:.1f} s deadline passed; answering from memory", source=SOURCE)
            answer = _recap_extract(progress) or await self._slow_answer(request, progress)
        for observer in self._observers:
            observer(answer.route, time.perf_counter() - started, late)
        told = self._reports.pop((request.guild_id, request.author_id), [])
        return replace(answer, text="\n\n".join([*told, answer.text])) if told else answer

    async def _result(self, task: asyncio.Task[Answer], request: Request) -> Answer:
        """The answer; when the database failed under it, what is still in mind instead of an apology."""
        exc = task.exception()
        if exc is None:
            return task.result()
        if not storage_trouble(exc):
            raise exc
        self._storage.failed(exc, source=SOURCE, hold=False)
        return await self._from_caches(request)

    def _in_mind(self, request: Request) -> str | None:
        """The member's context or facts as this process last had them, without reading storage."""
        known = self._recollection.remembered(request.guild_id, request.author_id) if self._recollection else None
        return known or self._facts.known(request.guild_id, request.author_id)

    async def _from_caches(self, request: Request) -> Answer:
        """Storage is away: the member's context or facts as this process last had them, said plainly."""
        known = self._in_mind(request)
        if not known:
            self._storage.served("replies with nothing in mind")
            text = f"{AWAY}, {NOTHING_DONE}, and I have nothing about you in mind."
            return Answer(f"{text} Ask me again in a minute.", Route.CHAT)
        self._storage.served("replies from caches")
        try:
            async with asyncio.timeout(FALLBACK_READ_SECONDS):  # names are in memory; a miss may read storage
                known = await self._directory.render_mentions(request.guild_id, known, at=False)
        except Exception as exc:
            if not storage_trouble(exc):
                raise
        # Whatever was asked (a change too): nothing was looked up or changed, and what is in mind is said as such.
        text = f"{AWAY}, {NOTHING_DONE}. What I still have in mind about you: {known}"
        return Answer(text, Route.CHAT, members=frozenset({request.author_id}))

    async def _tracked(self, request: Request, is_admin: bool, progress: _Progress, deadline: float) -> Answer:
        _PROGRESS.set(progress)  # in this task's own context: concurrent replies never see each other's
        with answer_by(deadline):  # a model failure whose retry cannot land in time falls back at once
            return await self._respond(request, is_admin=is_admin)

    def _finish_late(self, task: asyncio.Task[Answer], request: Request, on_late: LateAnswer | None) -> None:
        """Let a facts change finish, then report it: through `on_late`, else with the member's next reply."""

        async def report() -> None:
            try:
                answer = await task
            except Exception:
                log.exception("a facts change finishing after the reply deadline failed")
                answer = Answer(
                    "Sorry, that change failed after all; nothing was changed. Please try again.", Route.CHAT
                )
            if on_late is not None:
                try:
                    await on_late(answer)
                    return
                except Exception:
                    log.exception("could not send a late answer; it goes with the member's next reply")
            key = (request.guild_id, request.author_id)
            self._reports.setdefault(key, []).append(f"About your earlier message: {answer.text}")

        late = spawn(report(), name="late facts change")
        self._late.add(late)
        late.add_done_callback(self._late.discard)

    async def _slow_answer(self, request: Request, progress: _Progress) -> Answer:
        """The facts (and anything recall found) with one honest sentence; never waits on the model."""
        decision = progress.committing
        subject = decision.subject_id if decision is not None and decision.subject_id is not None else None
        subject = subject or request.author_id
        try:
            async with asyncio.timeout(FALLBACK_READ_SECONDS):
                name = await self._directory.name(request.guild_id, subject)
                facts = await self._facts.get(request.guild_id, subject) or ""
                facts = await self._directory.render_mentions(request.guild_id, facts, at=False) if facts else ""
        except TimeoutError:  # storage is locked or slow: what is still in mind, if anything
            if decision is None and progress.found is None and self._in_mind(request):
                return await self._from_caches(request)
            return Answer(f"{SLOW}, and so is my memory. Please try again in a moment.", Route.CHAT)
        except Exception as exc:
            if not storage_trouble(exc):
                raise
            self._storage.failed(exc, source=SOURCE, hold=False)
            if decision is None and progress.found is None:
                return await self._from_caches(request)
            name, facts = "them", self._facts.known(request.guild_id, subject) or ""  # names may need storage too
        if decision is not None:
            verb = "saving" if decision.route is Route.REMEMBER else "forgetting"
            text = (
                f"{SLOW}, so I'm still {verb} that about {name}; I'll tell you when it's done. "
                f"What I know about {name} so far: {facts or 'nothing yet'}"
            )
            return Answer(text, decision.route, members=frozenset({subject}))
        known = f"What I know about you: {facts}" if facts else "I don't know anything about you yet."
        if (found := progress.found) is not None:
            text = f"{SLOW}, so here is what I found, unphrased:\n{found.text}\n{known}"
            return replace(found, text=text, members=found.members | {subject})
        return Answer(f"{SLOW}, so this is only what I remember. {known}", Route.CHAT, members=frozenset({subject}))

    async def drain(self, grace: float) -> None:
        """Shutdown: give facts changes still finishing after a deadline up to `grace` seconds."""
        if self._late:
            _, pending = await asyncio.wait(set(self._late), timeout=grace)
            for task in pending:
                log.warning("a facts change still waiting on the model was abandoned at shutdown")
                task.cancel()


@dataclass
class _Progress:
    """How far an answer got, for the answer given when the deadline passes first."""

    committing: Decision | None = None  # a facts change is under way: it must finish
    found: Answer | None = None  # recall: the sources, before the model phrases an answer from them


def _recap_extract(progress: _Progress) -> Answer | None:
    """A recap's extract, if that is how far the answer got: all a late recap needs is in it."""
    if (extract := progress.found) is None or extract.route is not Route.RECAP:
        return None
    return replace(extract, text=f"{SLOW}, so this recap only quotes the messages that matter.\n{extract.text}")


_PROGRESS: ContextVar[_Progress | None] = ContextVar("elefant_reply_progress", default=None)


def under_way(*, committing: Decision | None = None, found: Answer | None = None) -> None:
    """Note how far the answer under a deadline got (nothing happens without one)."""
    progress = _PROGRESS.get()
    if progress is not None:
        progress.committing = committing or progress.committing
        progress.found = found or progress.found
