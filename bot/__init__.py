"""Elefant: a Discord bot with a long memory."""
