"""One logging configuration for every entry point."""

from __future__ import annotations

import logging


def configure_logging(level: str) -> None:
    """Log to stderr at `level`; chatty libraries stay at WARNING unless we debug."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    if level != "DEBUG":
        for noisy in ("discord", "httpx", "httpx2", "openai", "google_genai", "aiosqlite", "alembic", "faiss"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
