"""Recaps as an answer: "what did I miss?", "catch me up on #events since Friday", `/memory recap`.

Memory gathers what a recap is made from within the read scope of the channel asked in (`Recollection.gather_recap`:
no model); its extract — each thread's most central messages, quoted — is noted at once as the answer to give if the
model is slow (`under_way`), then the model phrases the recap (`Recollection.phrase_recap`: one call per input,
shared and kept). The answer names the span and the threads, says who said what, what was decided and what is still
open, and links the few messages that matter.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from bot.llm.schemas import Recap, RecapItem
from bot.memory.directory import Directory
from bot.memory.recall.ranking import jump_url
from bot.memory.recap.face import RecapAsk
from bot.memory.recap.material import Material
from bot.memory.recollection import Recollection
from bot.reply.deadline import Answer, under_way
from bot.reply.routing import Request, Route

FAILING = "The model is failing right now, so this recap only quotes the messages that matter."
DAYS_SHOWN = 5


async def recap(recollection: Recollection, directory: Directory, request: Request) -> Answer:
    """The recap a request asks for, with the extract noted in case the model is slow."""
    asked = RecapAsk(request.guild_id, request.author_id, request.text, request.channel_id, request.message_id)
    made = await recollection.gather_recap(asked)
    now = directory.now()
    zone = directory.zone(request.guild_id)
    if made.empty:
        return Answer(nothing(made, now=now, zone=zone), Route.RECAP)
    members, quoted = made.members, made.quoted
    extract = told(made, made.extract, now=now, zone=zone)
    under_way(found=Answer(extract, Route.RECAP, members=members, quoted=quoted))  # if the model is slow
    phrased = await recollection.phrase_recap(made)
    text = told(made, phrased.recap, now=now, zone=zone)
    return Answer(f"{FAILING}\n{text}" if phrased.degraded else text, Route.RECAP, members=members, quoted=quoted)


def span_words(made: Material, *, now: datetime, zone: str) -> str:
    """Where and when the recap is about: "<#123> since you last spoke there (Fri 09:00)", "the server this week"."""
    where = "the server" if made.channel_id is None else f"<#{made.channel_id}>"
    local = made.since.astimezone(ZoneInfo(zone))
    moment = f"{local:%a %H:%M}" if (now - made.since).days < 6 else f"{local:%a %Y-%m-%d %H:%M}"
    if made.chosen == "named":
        when = made.label
    elif made.chosen == "here":
        when = f"since you last spoke there ({moment})"
    elif made.chosen == "server":
        when = f"since you last spoke in the server ({moment})"
    else:
        when = f"in the last {round((made.until - made.since).total_seconds() / 86400)} days"
    cut = " (a recap reaches back no further)" if made.capped else ""
    return f"{where} {when}{cut}"


def nothing(made: Material, *, now: datetime, zone: str) -> str:
    """What the bot says when there is nothing to recap (never whether something hidden from here was said)."""
    about = f" about {' '.join(made.topic)}" if made.topic else ""
    return f"Nothing{about} that I can tell here was said in {span_words(made, now=now, zone=zone)}."


def told(made: Material, recap: Recap, *, now: datetime, zone: str) -> str:
    """The recap as a message: the span, then each thread with its links."""
    count = len([t for t in made.threads if not t.minor]) or len(made.threads)  # greetings are no conversation
    about = f" about {' '.join(made.topic)}" if made.topic else ""
    header = (
        f"Recap of {span_words(made, now=now, zone=zone)}{about}: {made.said} message{'s' if made.said != 1 else ''}"
        f", {count} thread{'s' if count != 1 else ''} of conversation."
    )
    lines = [header]
    for item in recap.threads:
        lines.append(_item(made, item))
    if not recap.threads:
        lines += [f"• {d.day:%a %Y-%m-%d}, {d.author}: {d.summary}" for d in made.days[-DAYS_SHOWN:]]
    return "\n".join(lines)


def _item(made: Material, item: RecapItem) -> str:
    thread = made.threads[item.thread - 1]
    where = ""
    if made.channel_id is None and thread.lines:
        where = f" in <#{made.sources[thread.lines[0].ref].channel_id}>"
    text = f"• **{item.title.strip()}**{where} — {item.summary.strip()}"
    if item.decisions:
        text += " Decided: " + "; ".join(d.strip().rstrip(".") for d in item.decisions) + "."
    if item.open_questions:
        text += " Still open: " + "; ".join(q.strip() for q in item.open_questions)
    links = [
        f"<{jump_url(made.guild_id, made.sources[ref].channel_id, made.sources[ref].message_id)}>"
        for ref in item.refs[:3]
    ]
    return text + ("\n  " + " ".join(links) if links else "")
