"""The answer benchmark's baseline: no memory system at all, the whole conversation in the prompt.

Every message of the guild, all channels in time order, as lines "[date] name: text" (the form recalled lines take
in the bot's prompt), is the memory of one call per question with the bot's own `chat` prompt: the same
instructions, the same model and the same question as the reply path, so only what memory hands the model differs.
When the conversation does not fit the model's context (`context_tokens`, less room for the instructions, the
question and the answer), the newest lines that fit are kept, and the report says for how many questions all the
evidence is inside them.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from tqdm import tqdm

from bench.answers_reply import Replied, addressed
from bench.conversation_guild import Question
from bench.conversations import Conversation
from bot.llm.client import LLM
from bot.llm.offline import RECALLED_HEADER
from bot.llm.prompts import when
from bot.llm.tokens import CHARS_PER_TOKEN
from bot.settings import Settings

RESERVED_TOKENS = 2_000  # the chat prompt's instructions (~300 tokens), the question, and room for the answer


@dataclass(frozen=True)
class FullContext:
    """The newest lines of the conversation that fit the context, and how much of it that is."""

    memory: str
    messages: int  # in the whole conversation
    tokens: int  # of the whole conversation
    kept_messages: int
    kept_tokens: int
    first_kept_id: int  # the oldest kept message (ids grow with time): evidence at or after it is inside

    def holds(self, question: Question) -> bool:
        """Whether all the question's evidence is in the kept lines."""
        return all(i >= self.first_kept_id for i in question.evidence_ids)


def full_context(conv: Conversation, context_tokens: int) -> FullContext:
    """The whole conversation as lines, newest kept within `context_tokens` less `RESERVED_TOKENS` (streamed: the
    large profile's million lines are never all held)."""
    names = {m.id: m.name for m in conv.members}
    budget = max(0, context_tokens - RESERVED_TOKENS) * CHARS_PER_TOKEN - len(RECALLED_HEADER) - 1
    kept: deque[tuple[int, str]] = deque()
    size = total = count = 0
    for message in conv.iter_messages():
        line = f"[{message.timestamp:%Y-%m-%d}] {names[message.author_id]}: {message.text}"
        cost = len(line) + 1  # and its newline
        kept.append((message.message_id, line))
        size += cost
        total += cost
        count += 1
        while kept and size > budget:
            size -= len(kept.popleft()[1]) + 1
    memory = "\n".join([RECALLED_HEADER, *(line for _, line in kept)])
    first = kept[0][0] if kept else 1 << 63
    return FullContext(memory, count, -(-total // CHARS_PER_TOKEN), len(kept), -(-size // CHARS_PER_TOKEN), first)


class Baseline:
    """Asks the model each question once, with the whole (kept) conversation as its memory."""

    def __init__(self, llm: LLM, conv: Conversation, context: FullContext, settings: Settings) -> None:
        self._llm = llm
        self._conv = conv
        self._context = context
        self._settings = settings
        self._names = {m.id: m.name for m in conv.members}

    async def ask(self, question: Question) -> Replied:
        """One `chat` call: the bot's instructions, the conversation as memory, no channel window, the question."""
        _, bare = addressed(question)
        variables = {
            "bot_name": self._settings.bot_name,
            **when(self._conv.now, self._settings.default_timezone),
            "author": self._names.get(question.asker_id, "member"),
            "memory": self._context.memory,
            "channel_xml": "",
            "message": bare,
        }
        started = time.perf_counter()
        result = await self._llm.run("chat", variables, guild_id=self._conv.guild_id)
        return Replied(result.text, "full context", time.perf_counter() - started)

    async def ask_all(self, questions: list[Question]) -> list[Replied]:
        """Every question in turn."""
        return [await self.ask(q) for q in tqdm(questions, desc="full context", leave=False)]
