"""Typed SQLAlchemy models; the schema itself changes only through `db/migrations`."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import (
    REAL,
    Boolean,
    Date,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from db.types import Snowflake, SurrogateKey, UTCDateTime


class Base(DeclarativeBase):
    """Declarative base for every table."""


class ChatMessage(Base):
    """One guild message as seen by the bot; the raw material of the transient track."""

    __tablename__ = "chat_history"

    message_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    channel_id: Mapped[int] = mapped_column(Snowflake)
    user_id: Mapped[int] = mapped_column(Snowflake)
    message_text: Mapped[str] = mapped_column(Text)
    timestamp: Mapped[datetime] = mapped_column(UTCDateTime)
    edited_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reply_to_id: Mapped[int | None] = mapped_column(Snowflake)
    kind: Mapped[int] = mapped_column(SmallInteger, server_default="0")  # db.records.Kind

    __table_args__ = (
        Index("ix_chat_history_guild_user_ts", "guild_id", "user_id", "timestamp"),
        Index("ix_chat_history_guild_ts", "guild_id", "timestamp"),
        Index("ix_chat_history_channel_message", "channel_id", "message_id"),
        # Replies only: a mostly-NULL key made SQLite's planner think the index matched every row (0012).
        Index(
            "ix_chat_history_reply_to",
            "reply_to_id",
            sqlite_where=text("reply_to_id IS NOT NULL"),
            postgresql_where=text("reply_to_id IS NOT NULL"),
        ),
        # The bot's conversation alone (questions to it, its replies): the full-text index holds speech only
        # (0014), and what needs the conversation (deletion, "forget that …") finds it here.
        Index(
            "ix_chat_history_conversation",
            "guild_id",
            "timestamp",
            sqlite_where=text("kind <> 0"),
            postgresql_where=text("kind <> 0"),
        ),
    )


class UserFacts(Base):
    """The explicit facts about one person in one guild, as one third-person text blob."""

    __tablename__ = "user_facts"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    memory_blob: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class FactRevision(Base):
    """Every change of a facts blob, so any change can be seen and undone."""

    __tablename__ = "fact_revisions"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    user_id: Mapped[int] = mapped_column(Snowflake)
    op: Mapped[str] = mapped_column(String(16))
    old_blob: Mapped[str] = mapped_column(Text)
    new_blob: Mapped[str] = mapped_column(Text)
    requested_by: Mapped[int] = mapped_column(Snowflake)
    at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_fact_revisions_guild_user", "guild_id", "user_id", "id"),)


class DailySummary(Base):
    """What one person did on one calendar day of a guild; immutable once the day is over."""

    __tablename__ = "daily_summaries"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    day: Mapped[date] = mapped_column(Date)
    user_id: Mapped[int] = mapped_column(Snowflake)
    summary: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(100))
    prompt_version: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (UniqueConstraint("guild_id", "day", "user_id", name="uq_daily_summaries_guild_day_user"),)


class MemberName(Base):
    """The display name a member is known by, only used to render prompts and resolve names."""

    __tablename__ = "member_names"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    display_name: Mapped[str] = mapped_column(String(100))
    username: Mapped[str | None] = mapped_column(String(100))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # casefold()ed in Python: SQLite's lower() folds ASCII only, so "Ömer" would never match "ömer"
    display_key: Mapped[str | None] = mapped_column(String(100))
    username_key: Mapped[str | None] = mapped_column(String(100))

    __table_args__ = (
        Index("ix_member_names_guild_display_key", "guild_id", "display_key"),
        Index("ix_member_names_guild_username_key", "guild_id", "username_key"),
    )


class GuildSettings(Base):
    """Per-guild overrides of the global settings."""

    __tablename__ = "guild_settings"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    timezone: Mapped[str | None] = mapped_column(String(64))
    facts_policy: Mapped[str | None] = mapped_column(String(20))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class UserOptOut(Base):
    """A member who asked the bot not to store their messages in a guild."""

    __tablename__ = "user_optouts"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class OptOutSpan(Base):
    """A time a member was opted out and is no more: what they said from `since` to `until` is never stored, by any
    way in (live, catch-up, import, spill replay), whatever they chose after. The member is named by the digest a
    forget-me tombstone uses (db/tombstones.member_key), not their id: a closed opt-out lists nobody."""

    __tablename__ = "optout_spans"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    member_key: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    since: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    until: Mapped[datetime] = mapped_column(UTCDateTime)


class LlmCall(Base):
    """Every model call: what it was for, what it cost, how it ended; feeds stats and benchmarks."""

    __tablename__ = "llm_calls"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    guild_id: Mapped[int | None] = mapped_column(Snowflake)
    operation: Mapped[str] = mapped_column(String(32))
    role: Mapped[str] = mapped_column(String(8))
    provider: Mapped[str] = mapped_column(String(16))
    model: Mapped[str] = mapped_column(String(100))
    tokens_in: Mapped[int] = mapped_column(Integer)
    tokens_out: Mapped[int] = mapped_column(Integer)
    latency_ms: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(16))

    __table_args__ = (Index("ix_llm_calls_guild_at", "guild_id", "at"),)


class HistoricalSummary(Base):
    """A member's days 2–7 before `end_date`, summarised once and kept (the days are over)."""

    __tablename__ = "historical_summaries"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    user_id: Mapped[int] = mapped_column(Snowflake)
    end_date: Mapped[date] = mapped_column(Date)
    summary: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(100))
    prompt_version: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        UniqueConstraint("guild_id", "user_id", "end_date", name="uq_historical_summaries_guild_user_end"),
    )


class Rollup(Base):
    """A member's week or month beyond the last seven days, built from daily summaries once it is over."""

    __tablename__ = "rollups"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    user_id: Mapped[int] = mapped_column(Snowflake)
    period: Mapped[str] = mapped_column(String(8))  # "week" (ISO, Monday first) or "month"
    start_date: Mapped[date] = mapped_column(Date)
    end_date: Mapped[date] = mapped_column(Date)  # exclusive
    summary: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(100))
    prompt_version: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        UniqueConstraint("guild_id", "user_id", "period", "start_date", name="uq_rollups_guild_user_period_start"),
        Index("ix_rollups_guild_end", "guild_id", "end_date"),
    )


class MessageVector(Base):
    """A message's embedding for semantic recall (int8 × scale); goes with its message (ON DELETE CASCADE)."""

    __tablename__ = "message_vectors"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)  # a sync cursor
    message_id: Mapped[int] = mapped_column(
        Snowflake,
        ForeignKey("chat_history.message_id", ondelete="CASCADE", name="fk_message_vectors_message"),
        unique=True,
    )
    guild_id: Mapped[int] = mapped_column(Snowflake)
    model: Mapped[str] = mapped_column(String(64))
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    scale: Mapped[float] = mapped_column(REAL)

    __table_args__ = (Index("ix_message_vectors_guild_id", "guild_id", "id"),)


class ChannelPrivacy(Base):
    """Whether a channel's messages may feed guild-wide memory: automatic (public only), or an admin's choice."""

    __tablename__ = "channel_privacy"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    channel_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    is_private: Mapped[bool] = mapped_column(Boolean)
    mode: Mapped[str] = mapped_column(String(8))  # auto | include | exclude
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    parent_id: Mapped[int | None] = mapped_column(Snowflake)  # a thread's channel: the thread inherits its scope
    channel_type: Mapped[str | None] = mapped_column(String(24))  # e.g. "text", "public_thread", "private_thread"


class DeadLetter(Base):
    """An ingested record no database would take even after normalising it: kept with the reason, not lost."""

    __tablename__ = "dead_letters"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    guild_id: Mapped[int | None] = mapped_column(Snowflake)
    channel_id: Mapped[int | None] = mapped_column(Snowflake)
    user_id: Mapped[int | None] = mapped_column(Snowflake)
    message_id: Mapped[int | None] = mapped_column(Snowflake)
    reason: Mapped[str] = mapped_column(Text)
    payload: Mapped[str] = mapped_column(Text)  # the record as JSON

    __table_args__ = (Index("ix_dead_letters_guild_user", "guild_id", "user_id"),)


class MemoryChange(Base):
    """A change to what memory may say about a guild (or a member): other processes drop their caches."""

    __tablename__ = "memory_changes"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    user_id: Mapped[int | None] = mapped_column(Snowflake)
    what: Mapped[str] = mapped_column(String(24))
    origin: Mapped[str] = mapped_column(String(32))  # the process that made it (it knows already)
    at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_memory_changes_guild_id", "guild_id", "id"),)


class ReplySource(Base):
    """What a stored reply of the bot was built from: a member's data, or a message it quoted."""

    __tablename__ = "reply_sources"

    id: Mapped[int] = mapped_column(SurrogateKey, primary_key=True, autoincrement=True)
    reply_id: Mapped[int] = mapped_column(Snowflake)
    guild_id: Mapped[int] = mapped_column(Snowflake)
    user_id: Mapped[int | None] = mapped_column(Snowflake)
    message_id: Mapped[int | None] = mapped_column(Snowflake)

    __table_args__ = (
        Index("ix_reply_sources_reply", "reply_id"),
        Index("ix_reply_sources_guild_user", "guild_id", "user_id"),
        Index("ix_reply_sources_message", "message_id"),
    )


class BuildClaim(Base):
    """A process building one derived thing (a guild-day's summaries, a history, a rollup) until `expires`.

    PostgreSQL only (SQLite has one writing process): the others wait for the result instead of calling the
    model too. The key is a digest of what is built, so no member's id is kept here.
    """

    __tablename__ = "build_claims"

    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    owner: Mapped[str] = mapped_column(String(32))
    expires: Mapped[float] = mapped_column(Double)  # seconds since the epoch, by the database's clock


class DeletedMessage(Base):
    """A message deleted (in Discord, by "forget that", by a purge): no writer may store it again."""

    __tablename__ = "deleted_messages"

    message_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class Tombstone(Base):
    """Messages of a guild created at or before `before` that no writer may store again: a forgotten member's
    (kind "member", target a digest of guild and member: db/tombstones.member_key), a purged channel's ("channel",
    target the channel) or all of them ("before", target 0: a purged span or the whole guild). Nothing of what
    was said, and no member's id."""

    __tablename__ = "tombstones"

    guild_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    target_id: Mapped[int] = mapped_column(Snowflake, primary_key=True, autoincrement=False)
    before: Mapped[datetime] = mapped_column(UTCDateTime)
