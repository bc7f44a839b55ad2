"""End to end: every benchmark question sent to the bot as an ordinary message, scored on what the model receives.

A member writes "Elefant, <question>" in the general channel. The message is stored as the listener stores it
(addressed to the bot), the bot's own reply path answers it (`Responder.respond`: the offline fast path routes it,
the rest is chat, as on a machine with no key), and the bot's answer is stored as its replies are. The model is
the offline provider wrapped in a recorder (bot/llm/recording.py), so what is scored is what was sent on the
route the bot took: the memory part of the prompt (the channel's window, which holds earlier questions and the
bot's earlier answers, never counts as evidence). A question about the past is answered by the model there too
(offline the bot only lists what it found), as `python -m bot prompt` shows it.

Beside the benchmark's questions: multi-part questions (two stories of different members whose evidence lies in
different months, asked in one message), and questions asked a second time after the bot answered them once.
They are asked in the order they were before issue 38 (the first five types' questions, every 8th asked twice, then
the multi-part ones), and the harder types' questions after them (none asked twice), so that what the first ones
found stays comparable; "overall, old types" is "overall" as it was (the multi-part questions in it).
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass, field

from tqdm import tqdm

from bench.conversation_guild import Question
from bench.conversation_stories import BASE_TYPES, OVERALL_BASE, score_keys
from bench.conversations import Conversation
from bot.llm.client import LLM
from bot.llm.offline import OfflineProvider
from bot.llm.prompts import load_prompts
from bot.llm.recording import RecordingProvider
from bot.memory.manager import MemoryManager
from bot.memory.types import IncomingMessage, Kind
from bot.reply.model_turns import ModelTurns
from bot.reply.respond import Responder
from bot.reply.routing import Request, address, stored_kind

BOT_ID = 1 << 59
MULTI_PART = "multi-part"
TWICE = "asked twice"
_PREFIX = ("hey elefant, ", "quick q: ", "random q but ", "elefant, ", "@elefant ", "elefant ")


@dataclass
class Asked:
    """What one ordinary message got: the route taken and whether all its evidence reached the model."""

    question: Question
    route: str
    complete: bool
    present: list[bool]
    memory_tokens: int
    recalled: bool  # whether any recall reached the model (the relevance floor let it through)
    memory: str = field(repr=False, default="")  # the memory part of what the model received


@dataclass
class EndToEnd:
    """Per type (and overall): share with all evidence received, share of evidence received; routes taken."""

    asked: list[Asked] = field(default_factory=list)

    def result(self) -> dict[str, tuple[float, float]]:
        complete: dict[str, list[bool]] = defaultdict(list)
        present: dict[str, list[bool]] = defaultdict(list)
        for a in self.asked:
            keys = score_keys(a.question.type) if a.question.type != TWICE else (TWICE,)
            keys += (OVERALL_BASE,) if a.question.type == MULTI_PART else ()
            for key in keys:
                complete[key].append(a.complete)
                present[key] += a.present
        return {k: (sum(v) / len(v), sum(present[k]) / len(present[k])) for k, v in complete.items()}

    def routes(self) -> dict[str, float]:
        counts: dict[str, int] = defaultdict(int)
        for a in self.asked:
            counts[a.route] += 1
        return {route: n / len(self.asked) for route, n in sorted(counts.items())}


def multi_part(conv: Conversation, count: int = 40, seed: int = 11) -> list[Question]:
    """Questions joining two single-story questions about different members, evidence months apart."""
    by_id = {m.message_id: m for m in conv.planted}
    singles = [q for q in conv.questions if q.type in {"paraphrase", "temporal", "name"}]
    rng = random.Random(seed)
    joined: list[Question] = []
    for first, second in itertools.islice(_pairs(singles, rng), 5000):
        if len(joined) == count:
            break
        months = {by_id[i].timestamp.strftime("%Y-%m") for i in first.evidence_ids + second.evidence_ids}
        subjects = {first.story.split("/")[-1], second.story.split("/")[-1]}
        if len(months) < 2 or len(subjects) < 2 or first.asker_id != second.asker_id:
            continue
        text = f"{_bare(first.text).rstrip('?')}, and {_bare(second.text)}"
        joined.append(
            Question(
                text if text.endswith("?") else text + "?",
                first.asker_id,
                first.asked_at,
                MULTI_PART,
                first.evidence_ids + second.evidence_ids,
                f"{first.answer}; {second.answer}",
                f"{first.story}+{second.story}",
            )
        )
    return joined


def _pairs(questions: list[Question], rng: random.Random) -> itertools.cycle[tuple[Question, Question]]:
    pairs = [(a, b) for a in questions for b in questions if a is not b and a.asker_id == b.asker_id]
    rng.shuffle(pairs)
    return itertools.cycle(pairs)


def _bare(text: str) -> str:
    """A question without its chatty opening ("quick q: …"), first letter lower case when joined."""
    lowered = text.lower()
    for prefix in _PREFIX:
        if lowered.startswith(prefix):
            text = text[len(prefix) :]
            break
    return text[:1].lower() + text[1:]


class Asker:
    """Sends questions to the bot as a member would and keeps what the model received for each."""

    def __init__(self, memory: MemoryManager, conv: Conversation) -> None:
        self._memory = memory
        self._conv = conv
        self._recorder = RecordingProvider(OfflineProvider())
        llm = LLM(None, prompts=load_prompts(), offline=self._recorder)
        turns = ModelTurns(llm, memory.directory, memory.settings)
        self._responder = Responder(
            memory.facts,
            memory.recollection,
            memory.directory,
            router=turns.route,
            chatter=turns.chat,
            policy="anyone",
            recall_chatter=turns.chat,
        )
        self._general = conv.channels[0].id
        # After the first stories' newest message, as before issue 38 (the harder stories' ids do not move it).
        newest = max(m.message_id for m in conv.planted if m.message_id not in conv.harder_ids)
        self._ids = itertools.count(int(newest) + (1 << 30))
        self._names = {m.id: m.name for m in conv.members}

    async def ask(self, question: Question, said: dict[int, str]) -> Asked:
        """Say the question, let the bot answer it, store the answer; score the memory the model received."""
        text = question.text if "elefant" in question.text.lower() else f"Elefant, {question.text}"
        addressed = address(text, bot_user_id=BOT_ID, bot_name="Elefant", replied_to_bot=False) or text
        asked = self._line(question.asker_id, text, stored_kind(addressed))
        await self._memory.intake.message(asked)
        await self._memory.flush()
        request = Request(
            self._conv.guild_id,
            question.asker_id,
            addressed,
            channel_id=self._general,
            message_id=asked.message_id,
            bot_user_id=BOT_ID,
        )
        self._recorder.calls.clear()
        answer = await self._responder.respond(request)
        reply = self._line(BOT_ID, answer.text, Kind.BOT, reply_to=asked.message_id)
        await self._memory.intake.reply(reply, members=answer.members, messages=answer.quoted)
        sent = self._recorder.last("chat")
        memory = str(sent.variables.get("memory", "")) if sent is not None else ""
        present = [said[e] in memory for e in question.evidence_ids]
        recalled = "Recalled conversation:" in memory
        return Asked(question, answer.route.value, all(present), present, len(memory) // 4, recalled, memory)

    def _line(self, author: int, text: str, kind: Kind, reply_to: int | None = None) -> IncomingMessage:
        clock = self._memory.clock
        clock.advance(seconds=20)  # type: ignore[attr-defined]  # the benchmark's FakeClock
        name = "Elefant" if author == BOT_ID else self._names.get(author, "member")
        return IncomingMessage(
            self._conv.guild_id, self._general, next(self._ids), author, name, text, clock.now(),
            reply_to_id=reply_to, kind=kind,
        )  # fmt: skip


async def measure(memory: MemoryManager, conv: Conversation, *, twice_every: int = 8, every: int = 1) -> EndToEnd:
    """Every question (and the multi-part ones) as an ordinary message; every `twice_every`-th of the first types
    asked again. `every`: only every such question (a quick check)."""
    said = {m.message_id: m.text for m in conv.planted}
    asker, result = Asker(memory, conv), EndToEnd()
    first = [q for q in conv.questions if q.type in BASE_TYPES]
    harder = [q for q in conv.questions if q.type not in BASE_TYPES]
    questions = (first + multi_part(conv) + harder)[::every]
    for n, question in enumerate(tqdm(questions, desc="end to end", leave=False)):
        result.asked.append(await asker.ask(question, said))
        if n % twice_every == 0 and question.type in BASE_TYPES:
            again = Question(question.text, question.asker_id, question.asked_at, TWICE, question.evidence_ids,
                             question.answer, question.story)  # fmt: skip
            result.asked.append(await asker.ask(again, said))
    return result
