"""Understanding messages addressed to the bot: remember / forget / about / recall / recap / chat, on plain data.

A deterministic fast path handles the common phrasings (so they work offline); the responder asks the model
router (bot/reply/model_turns.py `ModelTurns.route`) for the rest. Nothing here imports discord.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from bot.memory.recall.question import QUESTION_WORDS, words_of
from bot.memory.types import Kind
from bot.text import MENTION


class Route(StrEnum):
    """What the person wants from the bot."""

    REMEMBER = "remember"
    FORGET = "forget"
    ABOUT = "about"
    RECALL = "recall"
    RECAP = "recap"
    CHAT = "chat"


@dataclass(frozen=True, slots=True)
class Request:
    """A message addressed to the bot, with the address already removed."""

    guild_id: int
    author_id: int
    text: str
    reply_to_author_id: int | None = None
    reply_to_text: str | None = None
    channel_id: int | None = None
    message_id: int | None = None
    mentioned_user_ids: tuple[int, ...] = ()
    bot_user_id: int | None = None  # who "this" is when someone replies to the bot itself
    route: Route | None = None  # a front end that already knows what is asked (/memory recap): no routing


@dataclass(frozen=True, slots=True)
class Decision:
    """The route, and for facts operations who they are about and what the fact is."""

    route: Route
    subject_id: int | None = None
    fact: str | None = None
    candidates: tuple[int, ...] = field(default=())
    unknown_name: str | None = None
    speaker_id: int | None = None  # who wrote the fact's words ("I" means them); None: the requester

    @property
    def needs_subject(self) -> bool:
        """True when a facts operation could not tell whom it is about."""
        return self.route in {Route.REMEMBER, Route.FORGET, Route.ABOUT} and self.subject_id is None


class NameResolver(Protocol):
    """Finds members by a typed name (see bot.memory.names.NameDirectory)."""

    async def resolve(self, guild_id: int, name: str) -> list[int]: ...


_LEAD = r"^(?:(?:please|pls|hey|ok|okay)[\s,]+)*"
_REMEMBER_THIS = re.compile(_LEAD + r"remember\s+(?:this|that)(?:\s+(?:about|for)\s+(?P<who>.+?))?\s*[.!]*$", re.I)
_REMEMBER = re.compile(_LEAD + r"remember(?:\s+that\b)?\s*[:,\-–]?\s*(?P<fact>\S.*)$", re.I | re.S)
_FORGET = re.compile(_LEAD + r"forget(?:\s+that\b)?\s*[:,\-–]?\s*(?P<fact>\S.*)$", re.I | re.S)
_ABOUT = re.compile(
    _LEAD + r"(?:what\s+do\s+you\s+(?:know|remember)\s+about|what\s+do\s+you\s+know\s+of|"
    r"tell\s+me\s+(?:what\s+you\s+know\s+)?about|who\s+is|who's)\s+(?P<who>.+?)\s*[?.!]*$",
    re.I,
)
# "who's Rui's employer?", "tell me about Bob's band": about a thing of someone's, not the person (recall, chat)
_POSSESSIVE = re.compile(r"\w(?:'s|s')\s+\w", re.I)
# Questions about the past: "do you remember when…", "when did Bob mention…", "… last month?"
_RECALL_LEAD = re.compile(
    _LEAD + r"(?:do\s+you\s+remember|remember\s+when|can\s+you\s+find|find|search(?:\s+for)?|"
    r"look\s+up|recall)\b",
    re.I,
)
_RECALL_QUESTION = re.compile(
    r"^(?:when|what|who|where|which|how|did|was|were)\b.*\b(?:did|said|say|says|mention(?:ed)?|decided?|agreed?|"
    r"talk(?:ed)?|told|wrote|post(?:ed)?|shared?|plan(?:ned)?|ago|yesterday|last\s+(?:week|month|year|time))\b",
    re.I | re.S,
)
# "What did I miss?": a recap of a span, not a search of the whole past (bot/reply/recap.py).
_RECAP = re.compile(
    _LEAD + r"(?:what\s+(?:did|have|'?ve)\s+i\s+miss(?:ed)?\b|what'?s?\s+i\s+missed\b|catch\s+me\s+up\b|"
    r"fill\s+me\s+in\b|(?:bring|get)\s+me\s+up\s+to\s+speed\b|(?:give\s+me\s+|can\s+i\s+get\s+)?(?:a\s+)?"
    r"(?:recap|tl;?dr)\b|summari[sz]e\s+(?:here|this|the\s+(?:channel|server|day|week)|today|<#)|"
    r"what(?:'?s|\s+has|\s+is)?\s+(?:been\s+)?(?:happening|going\s+on)\s+(?:here|in\s+<#|lately|today|this)|"
    r"what\s+happened\s+(?:here|in\s+<#|while|since|today|this\s+(?:morning|week|weekend)|overnight|yesterday))",
    re.I,
)
# "What did we decide about the tournament?": the recent threads about it — unless it points further back than a
# recap reaches ("… about the trip last month?"), which is a question about the past (recall).
_DECIDED = re.compile(
    _LEAD + r"(?:what\s+(?:did|have)\s+(?:we|you\s+(?:all|guys)|everyone|people|they)\s+(?:decide|agree)d?\s+"
    r"(?:about|on|for)\b|what\s+(?:was|got|has\s+been)\s+decided\s+(?:about|on|for)\b)",
    re.I,
)
_MONTH_NAMES = "january|february|march|april|june|july|august|september|october|november|december"
_LONG_AGO = re.compile(
    rf"\b(?:last\s+(?:month|year)|ago|back\s+in|in\s+(?:19|20)\d\d|{_MONTH_NAMES}|"
    r"(?:jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?\s+\d)\b",
    re.I,
)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|i'll|im|my|me|mine)\b", re.I)
_SELF = {"me", "myself", "i", "my self"}
_GREETING = r"(?:hey|hi|hiya|heya|hello|yo|oi|ok|okay)"  # before the bot's name, it still addresses the bot


def address(content: str, *, bot_user_id: int, bot_name: str, replied_to_bot: bool) -> str | None:
    """The text meant for the bot, or None when the message is not addressed to it.

    Addressed means: mentions the bot, replies to the bot, or starts with its name ("Elefant, …"), a greeting
    before it too ("hey elefant, …": stored as speech, such a question became its own second asking's best hit).
    """
    mention = re.compile(rf"<@!?{bot_user_id}>")
    text = content.strip()
    by_name = re.match(rf"^(?:{_GREETING}[\s,]+)?@?{re.escape(bot_name)}\b[\s,:!\-–]*", text, re.I)
    # Only the mention or name that addresses the bot goes: a later mention of it is part of what is said
    # ("Elefant, remember that @Elefant likes peanuts" is about the bot, not about someone called "likes").
    if by_name:
        return text[by_name.end() :].strip()
    if found := mention.search(text):
        return re.sub(r"\s{2,}", " ", text[: found.start()] + text[found.end() :]).strip(" ,:")
    if replied_to_bot:
        return text
    return None


_QUESTION = re.compile(rf"^(?:{QUESTION_WORDS})\b", re.I)


def asks(text: str) -> bool:
    """Whether text addressed to the bot is a question with something to search for (offline: recall)."""
    plain = MENTION.sub(" ", text).strip()
    return bool(words_of(plain)) and (plain.endswith("?") or bool(_QUESTION.match(plain)))


def stored_kind(addressed: str | None) -> Kind:
    """How a message is stored, given what `address` found in it (None: not addressed to the bot).

    Whatever is addressed to the bot (a question, a command, chat with it, a bare mention) is the conversation
    with the bot, not evidence of what people said: it is kept for the channel's window and deleted with its
    author, but recall, summaries and embeddings never read it. Every front end decides with this, so the
    Discord listener (and its catch-up), the console and the importer store the same message alike.
    """
    return Kind.SPEECH if addressed is None else Kind.ADDRESSED


async def fast_route(request: Request, names: NameResolver) -> Decision | None:
    """Route the common phrasings deterministically; None means "ask the LLM router"."""
    text = request.text.strip()
    if match := _REMEMBER_THIS.match(text):
        return await _remember_this(request, match.group("who"), names)
    if (match := _ABOUT.match(text)) and not _POSSESSIVE.search(match.group("who")):
        return await _about(request, match.group("who"), names)
    # A slash command says what it asks. A recap before recall: "what did we decide about …" asks for the recent
    # threads about it, not for a search of everything ever said.
    if request.route is not None or _RECAP.match(text) or (_DECIDED.match(text) and not _LONG_AGO.search(text)):
        return Decision(request.route or Route.RECAP)
    searchable = bool(words_of(MENTION.sub(" ", text)))  # "what did I say?" is about the chat at hand
    if _RECALL_LEAD.match(text):  # before "remember …": "do you remember when" is a question, not a fact
        return Decision(Route.RECALL if searchable else Route.CHAT)
    for route, pattern in ((Route.REMEMBER, _REMEMBER), (Route.FORGET, _FORGET)):
        if match := pattern.match(text):
            fact = match.group("fact").strip()
            subject = await _subject_of_fact(request, fact, names)
            return Decision(route, subject.subject_id, fact, subject.candidates, subject.unknown_name)
    return Decision(Route.RECALL) if searchable and _RECALL_QUESTION.match(text) else None


async def _about(request: Request, who: str, names: NameResolver) -> Decision:
    """ "who is X?", "what do you know about X?": about a member; about someone or something no member goes by
    ("who is Dr Patel?", "tell me about the tournament"), a question of what was said."""
    subject = await _subject_from_name(request, who, names)
    if subject.unknown_name is not None and not subject.candidates:
        return Decision(Route.RECALL)
    return Decision(Route.ABOUT, subject.subject_id, None, subject.candidates, subject.unknown_name)


async def _remember_this(request: Request, who: str | None, names: NameResolver) -> Decision | None:
    """ "remember this (about X)" in reply to a message: the replied-to words are the fact."""
    if request.reply_to_text is None:
        return None  # "remember that" without a reply to point at: not this phrasing
    subject = (
        await _subject_from_name(request, who, names)
        if who
        else Decision(Route.REMEMBER, subject_id=request.reply_to_author_id)
    )
    return Decision(
        Route.REMEMBER,
        subject.subject_id,
        request.reply_to_text.strip(),
        subject.candidates,
        subject.unknown_name,
        speaker_id=request.reply_to_author_id,
    )


async def _subject_from_name(request: Request, who: str, names: NameResolver) -> Decision:
    """Whom a "… about X" phrase names: a mention, me/myself, or a member's name."""
    who = who.strip().rstrip("?.!").strip()
    if mention := MENTION.fullmatch(who):
        return Decision(Route.ABOUT, subject_id=int(mention.group(1)))
    if who.casefold() in _SELF:
        return Decision(Route.ABOUT, subject_id=request.author_id)
    found = await names.resolve(request.guild_id, who)
    if len(found) == 1:
        return Decision(Route.ABOUT, subject_id=found[0])
    if found:
        return Decision(Route.ABOUT, candidates=tuple(found))
    return Decision(Route.ABOUT, unknown_name=who)


async def _subject_of_fact(request: Request, fact: str, names: NameResolver) -> Decision:
    """Whom a fact is about: first person, a leading mention, a single mention, or a leading name."""
    if _FIRST_PERSON.match(fact):
        return Decision(Route.REMEMBER, subject_id=request.author_id)
    if lead := MENTION.match(fact):
        return Decision(Route.REMEMBER, subject_id=int(lead.group(1)))
    mentioned = {int(m) for m in MENTION.findall(fact)}
    if len(mentioned) == 1:
        return Decision(Route.REMEMBER, subject_id=mentioned.pop())
    words = fact.split()
    for size in (3, 2, 1):  # longest name first: "Mary Ann" before "Mary"
        if len(words) < size:
            continue
        candidate = " ".join(words[:size]).rstrip(",.:;!?").removesuffix("'s").removesuffix("’s")
        found = await names.resolve(request.guild_id, candidate)
        if len(found) == 1:
            return Decision(Route.REMEMBER, subject_id=found[0])
        if found:
            return Decision(Route.REMEMBER, candidates=tuple(found))
    return Decision(Route.REMEMBER, unknown_name=words[0] if words else None)


_THIRD_PERSON = [
    (r"\bI am\b|\bI'm\b|\bIm\b", "{name} is"),
    (r"\bI was\b", "{name} was"),
    (r"\bI have\b|\bI've\b", "{name} has"),
    (r"\bI had\b|\bI'd\b", "{name} had"),
    (r"\bI will\b|\bI'll\b", "{name} will"),
    (r"\bI do not\b|\bI don't\b", "{name} does not"),
    (r"\bI can\b", "{name} can"),
    (r"\bmyself\b", "{name}"),
    (r"\bmine\b", "{name}'s"),
    (r"\bmy\b", "{name}'s"),
    (r"\bme\b", "{name}"),
]


def third_person(fact: str, name: str) -> str:
    """Rewrite a first-person fact about `name` into the third person ("I like tea" → "Ana likes tea")."""
    text = fact.strip()
    for pattern, replacement in _THIRD_PERSON:
        text = re.sub(pattern, replacement.format(name=name), text, flags=re.I)
    # "I like" → "Ana likes": a simple -s agreement is right for the great majority of verbs people use.
    text = re.sub(
        r"\bI ((?:never|always|often|still|just|usually|sometimes|really|also) )?(\w+)\b",
        lambda m: f"{name} {m.group(1) or ''}{_agree(m.group(2))}",
        text,
    )
    return text


_NO_AGREEMENT = {
    "can",
    "could",
    "will",
    "would",
    "shall",
    "should",
    "may",
    "might",
    "must",
    "did",
    "went",
    "got",
    "made",
    "saw",
    "said",
    "came",
    "took",
    "gave",
    "left",
    "met",
    "bought",
    "thought",
    "told",
    "found",
    "felt",
    "lost",
    "won",
    "ate",
    "drank",
    "ran",
    "began",
    "became",
    "knew",
    "wrote",
    "sold",
    "sent",
    "spent",
    "moved",
}


def _agree(verb: str) -> str:
    if verb.lower() in _NO_AGREEMENT or verb.endswith("ed"):
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
