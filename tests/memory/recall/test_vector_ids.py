"""Discord's ids in a guild's vector index: held with their low bits mixed (faiss's id sets screen by those bits),
and every way in and out of the index still speaks message ids."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from bot.memory.recall import guild_vectors
from bot.memory.recall import vectors as vector_index
from tests.factories import ALICE, BOB, GUILD

YEAR_MS = 365 * 86_400_000
START_MS = 8 * YEAR_MS  # 2023, in Discord's epoch


def discord_ids(n: int, seed: int = 1) -> np.ndarray:
    """Snowflakes as Discord hands them out: a millisecond, then a worker and a process among a few, and a small
    increment (DiscordChatExporter's test channel: workers 1-10, processes 0-8, increments 0-80)."""
    rng = np.random.default_rng(seed)
    ms = np.sort(rng.integers(0, YEAR_MS, n)) + START_MS
    return (ms << 22) | (rng.integers(0, 11, n) << 17) | (rng.integers(0, 9, n) << 12) | rng.integers(0, 81, n)


def test_a_members_id_set_screens_out_nearly_every_other_vector_before_a_hash_lookup():
    """faiss's IDSelectorBatch answers "not a member" from a Bloom filter over an id's low bits, and looks every
    other id up in a hash set: with Discord's low bits as they come, 94 % of the other members' vectors went on to
    the lookup (a member's search at 173,000 vectors 3.3 ms against 1.5)."""
    ids = discord_ids(20_000)
    authors = np.random.default_rng(2).integers(0, 10, len(ids))
    guild = guild_vectors.GuildVectors(vector_index._exact(4))
    guild.note(guild_vectors.held(ids), authors, np.zeros(len(ids)))
    (selector,) = guild.keep_to(3, None, None, None)
    assert isinstance(selector, faiss.IDSelectorBatch)
    screened = set((guild.ids[authors == 3] & selector.mask).tolist())
    others = guild.ids[authors != 3]
    passed = sum((int(i) & selector.mask) in screened for i in others)
    assert passed < 0.1 * len(others)


def test_held_ids_are_unique_in_time_order_to_the_millisecond_and_come_back_as_they_were():
    ids = discord_ids(50_000)
    kept = guild_vectors.held(ids)
    assert len(np.unique(kept)) == len(ids)
    assert (kept >> 22 == ids >> 22).all() and (kept >= 0).all()
    assert (guild_vectors.held(kept) == ids).all()
    assert (kept != ids).mean() > 0.99


@pytest.mark.parametrize("own", [False, True], ids=["guild's index", "members' own indexes"])
async def test_every_way_into_the_index_takes_and_gives_message_ids(own: bool):
    """Searches kept to a member, a window, a season or a list; cosines; stored vectors; removal; an edit; with
    each member's own index beside the guild's (a large guild's) too."""
    index = vector_index.VectorIndex(None, "model", 4)  # type: ignore[arg-type]  # no SQL: the guild is given
    codec = vector_index._codec(4, np.vstack([np.eye(4), -np.eye(4)]).astype(np.float32)) if own else None
    index._guilds[GUILD] = guild_vectors.GuildVectors(vector_index._exact(4), codec=codec)
    a, b, c, d = (int(i) for i in discord_ids(4, seed=3))
    at = {m: float(((m >> 22) + 1_420_070_400_000) / 1000) for m in (a, b, c, d)}
    vectors = np.eye(4, dtype=np.float32)
    index.add(GUILD, [a, b, c], vectors[:3], [ALICE, BOB, ALICE], [at[a], at[b], at[c]])
    query = np.ones(4, dtype=np.float32) / 2

    async def found(**keep: object) -> set[int]:
        return {i for i, _ in await index.search(GUILD, query, 10, **keep)}  # type: ignore[arg-type]

    assert await found() == {a, b, c}
    assert await found(author=ALICE) == {a, c}
    assert await found(window=(at[b], at[c])) == {b}
    assert await found(window=(at[a], at[c] + 1), author=BOB) == {b}
    season = at[c] // 3600 * 3600  # a season starts on the hour
    assert await found(since=at[c]) == {m for m in (a, b, c) if at[m] >= season}
    assert await found(among=[c, d]) == {c}
    assert await index.similarity(GUILD, vectors[1], [a, b, d]) == {a: 0.0, b: 1.0}
    assert (await index.vectors_of(GUILD, [c, d]) == vectors[2:3]).all()
    index.add(GUILD, [b], vectors[3:4], [BOB], [at[b]])  # an edit: its vector replaced
    assert await index.similarity(GUILD, vectors[3], [b]) == {b: 1.0}
    assert [m for m, _ in await index.search(GUILD, vectors[3], 10, author=BOB)] == [b]  # once, as edited
    index.remove(GUILD, [a])
    assert await found() == {b, c}
    assert await found(author=ALICE) == {c}
    assert own == bool(index._guilds[GUILD].members)


async def test_a_members_search_in_a_large_guild_reads_only_their_own_vectors(monkeypatch):
    """In an IVF guild a search kept to a member scanned every list of the guild's index for their vectors (5-14 ms
    at 173,000 vectors, twice for each member a question names); it reads the member's own index, which holds theirs
    alone, and finds what an exact search of their vectors finds."""
    monkeypatch.setattr(vector_index, "IVF_FROM", 1_000)
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((3_000, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids, authors = guild_vectors.held(discord_ids(3_000, seed=5)), rng.integers(0, 6, 3_000)
    index = vector_index.VectorIndex(None, "model", 8)  # type: ignore[arg-type]  # no SQL: the guild is given
    guild = index._guilds[GUILD] = index._build(vectors, ids, authors)
    guild.note(ids, authors, np.zeros(len(ids)))
    assert guild.trained_at and sorted(guild.members) == list(range(6))
    assert sum(own.ntotal for own in guild.members.values()) == len(ids)
    query = vectors[7]
    faiss.cvar.indexIVF_stats.reset()
    found = [m for m, _ in await index.search(GUILD, query, 10, author=3)]
    assert faiss.cvar.indexIVF_stats.nq == 0  # the guild's inverted lists were not read
    mine = np.flatnonzero(authors == 3)
    exact = mine[np.argsort(-(vectors[mine] @ query))[:10]]
    assert len(set(found) & set(guild_vectors.held(ids[exact]).tolist())) >= 9  # 8-bit: a near tie may swap
    await index.search(GUILD, query, 10, among=found)
    assert faiss.cvar.indexIVF_stats.nq == 1  # a list of messages: the guild's index


async def test_words_said_again_and_again_are_one_candidate_the_newest():
    """The same words said again embed to the same vector: each is read, scored and ranked for ranking to keep one
    (ranking.distinct), and in a year-old guild those repeats were most of a question's candidates."""
    index = vector_index.VectorIndex(None, "model", 4)  # type: ignore[arg-type]  # no SQL: the guild is given
    index._guilds[GUILD] = guild_vectors.GuildVectors(vector_index._exact(4))
    ids = [int(i) for i in discord_ids(13, seed=4)]
    chatter, answer, other = np.eye(4, dtype=np.float32)[:3]
    index.add(GUILD, ids, np.vstack([chatter] * 10 + [answer, other, other]), [ALICE] * 13, [0.0] * 13)
    query = (0.8 * chatter + 0.5 * answer + 0.3 * other).astype(np.float32)
    for keep in ({}, {"author": ALICE}, {"among": ids}):
        found = await index.search(GUILD, query, 13, **keep)  # type: ignore[arg-type]
        assert [m for m, _ in found] == [ids[9], ids[10], ids[12]]  # the newest of each, best first
    # Other words of the same score (the same cosine, another vector) are each a candidate of their own.
    assert len(await index.search(GUILD, np.ones(4, dtype=np.float32) / 2, 13)) == 3
