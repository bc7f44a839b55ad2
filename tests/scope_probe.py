"""A guild where every kind of hidden message carries its own marker word, and a probe of every read path.

Hidden from a reader in the public channel of guild G:
  guildleak    said in another guild (H)
  privleak     said in a channel @everyone cannot read
  threadleak   said in a private thread of the public channel
  parentleak   said in a public thread of the private channel (hidden through its parent)
  excludedleak said in a channel an admin excluded
  optoutleak   said by a member who opted out afterwards (without deleting)
  botleak      said by the bot itself (its replies are derived data)
  askedleak    said to the bot (a question to it: the bot's conversation is no evidence of what was said)
Visible: kiwi, said by alice in the public channel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.memory.clock import FakeClock
from bot.memory.manager import MemoryManager
from bot.memory.recap.face import RecapAsk
from bot.settings import Settings
from db.records import Kind
from fakes.models import model_stack
from tests.factories import ALICE, BOB, GUILD, OTHER_GUILD, message

NOW = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
CAROL = 2**60 + 1003
PUB, PRIV, PT, PUBT, EX, PUB_H = (2**60 + 200 + i for i in range(6))
MARKERS = ("guildleak", "privleak", "threadleak", "parentleak", "excludedleak", "optoutleak", "botleak", "askedleak")


class SameVector:
    """An embedding 'model' to which every text means the same: every candidate passes the meaning test."""

    model = "same-vector"
    dimensions = 3

    async def embed(self, texts: list[str], *, task: str) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]


@dataclass
class Findings:
    """Markers each read path showed to the public channel of G; and whether the visible word was found."""

    leaks: dict[str, set[str]] = field(default_factory=dict)
    visible: bool = False

    def add(self, path: str, text: str) -> None:
        found = {m for m in MARKERS if m in text}
        if found:
            self.leaks.setdefault(path, set()).update(found)


async def build(engine: AsyncEngine, settings: Settings, *, vectors: bool = False) -> MemoryManager:
    """The guild above, with yesterday's and the day before's summaries built, H's history built too."""
    memory = MemoryManager(
        engine,
        settings,
        llm=model_stack(),
        clock=FakeClock(NOW),
        embedder=SameVector() if vectors else None,
    )
    await memory.start()
    await memory.intake.channel(GUILD, PRIV, is_private=True)
    await memory.intake.channel(GUILD, PT, is_private=True, parent_id=PUB, channel_type="private_thread")
    await memory.intake.channel(GUILD, PUBT, is_private=False, parent_id=PRIV, channel_type="public_thread")
    await memory.intake.channel(GUILD, EX, is_private=False)
    await memory.admin.set_channel_mode(GUILD, EX, "exclude")
    for back in (2, 0):
        at = NOW - timedelta(days=back, hours=2)
        said = [
            (GUILD, PUB, ALICE, f"kiwi smoothie day {back}", Kind.SPEECH),
            (GUILD, PRIV, ALICE, f"privleak vault day {back}", Kind.SPEECH),
            (GUILD, PT, ALICE, f"threadleak vault day {back}", Kind.SPEECH),
            (GUILD, PUBT, ALICE, f"parentleak vault day {back}", Kind.SPEECH),
            (GUILD, EX, ALICE, f"excludedleak vault day {back}", Kind.SPEECH),
            (GUILD, PUB, CAROL, f"optoutleak vault day {back}", Kind.SPEECH),
            (GUILD, PUB, ALICE, f"Elefant, what about the askedleak vault day {back}?", Kind.ADDRESSED),
            (OTHER_GUILD, PUB_H, ALICE, f"guildleak vault day {back}", Kind.SPEECH),
            (OTHER_GUILD, PUB_H, BOB, f"guildleak vault too day {back}", Kind.SPEECH),
        ]
        for i, (guild, channel, author, text, kind) in enumerate(said):
            name = {ALICE: "alice", BOB: "bob", CAROL: "carol"}[author]
            m = message(text, author=author, name=name, guild=guild, channel=channel, at=at + timedelta(minutes=i))
            await memory.intake.message(m.__class__(**{**_fields(m), "kind": kind}))
        reply = message(
            f"botleak vault day {back}", author=2**60 + 1, name="Elefant", channel=PUB, at=at + timedelta(minutes=30)
        )
        await memory.intake.reply(reply, members=[ALICE])
    await memory.flush()
    if memory.embedding is not None:  # the vector path must have something to find
        await memory.embedding.idle()
        await memory.flush()
        for guild in (GUILD, OTHER_GUILD):  # questions search the index once it is built (they never wait for it)
            assert await memory.recollection.vectors_ready(guild)
    assert memory.summaries is not None
    await memory.recollection.context(OTHER_GUILD, ALICE)  # H's summaries and history of alice exist first …
    await memory.summaries.past_day(GUILD, (NOW - timedelta(days=2)).date())  # … then G's, with carol in them
    await memory.admin.opt_out(GUILD, CAROL, delete_stored=False)
    return memory


async def recaps(memory: MemoryManager) -> str:
    """What recaps asked in G's public channel are made from and tell: of the whole server and of the channel, over
    both days (the span's messages and the stored summaries of its whole past days), and by default."""
    shown = []
    for asked in ("what happened this week?", "what happened here this week?", "what did I miss?"):
        made = await memory.recollection.gather_recap(RecapAsk(GUILD, BOB, asked, PUB))
        told = await memory.recollection.phrase_recap(made)
        shown += [str(v) for k, v in made.variables("Elefant").items() if k.endswith("_xml")]
        shown.append(told.recap.model_dump_json())
    return "\n".join(shown)


def _fields(m: object) -> dict[str, object]:
    return {name: getattr(m, name) for name in m.__dataclass_fields__}  # type: ignore[attr-defined]


async def probe(memory: MemoryManager) -> Findings:
    """Every read path a reader in G's public channel has, and what each shows."""
    found = Findings()
    for marker in MARKERS:
        for hit in await memory.recollection.recall(GUILD, f"{marker} vault", channel_id=PUB, limit=50):
            found.add(f"recall {hit.kind}", hit.text)
    for hit in await memory.recollection.recall(GUILD, "kiwi", channel_id=PUB, limit=50):
        found.visible |= "kiwi" in hit.text
    # Paths that read beside the full-text index (which holds speech alone): the turns around a hit, and a time
    # named with no word to search for (the period's newest messages).
    for asked in ("kiwi smoothie", "what was said the day before yesterday?"):
        found.add("turns", (await memory.recollection.recollect(GUILD, asked, channel_id=PUB)).text)
    if memory.vectors is not None:  # meaning-only candidates: the newest messages of the guild
        for hit in await memory.recollection.recall(GUILD, "something unrelated entirely", channel_id=PUB, limit=50):
            found.add(f"vectors {hit.kind}", hit.text)
    found.add("recap", await recaps(memory))
    for member in (ALICE, CAROL, BOB):
        found.add("context", await memory.recollection.context(GUILD, member, patient=True) or "")
    found.add("export", await memory.admin.export(GUILD, ALICE))
    figures = await memory.admin.stats(GUILD)
    if figures["messages"] != 16 or figures["members_seen"] != 3:  # G holds 16 stored messages of 3 authors
        found.leaks.setdefault("stats", set()).add(f"{figures['messages']} messages")
    return found
