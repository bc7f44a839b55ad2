"""The LLM layer: providers (Gemini, offline), prompts as files, resilience, usage accounting.

Nothing is imported from google.genai here: the package's own `types` submodule would replace it (see
bot/llm/build.py).
"""

from __future__ import annotations

from bot.llm.build import build_embedder, build_llm, make_client
from bot.llm.client import LLM

__all__ = ["LLM", "build_embedder", "build_llm", "make_client"]
