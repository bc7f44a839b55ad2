"""Benchmarks: one command each, printing ratios measured in one run."""

import db  # noqa: F401 - first, so every SQLite connection of a benchmark uses the same SQLite as the bot
