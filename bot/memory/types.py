"""Plain data the memory layer takes in (defined with the storage layer that writes it), never discord.py."""

from db.records import IncomingMessage, IngestOp, Kind, MessageDelete, MessageEdit, MessageKind

__all__ = ["IncomingMessage", "IngestOp", "Kind", "MessageDelete", "MessageEdit", "MessageKind"]
