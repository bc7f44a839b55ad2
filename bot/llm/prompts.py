"""Prompt files: loaded once at start-up, checked, and rendered with escaped values.

A prompt file is front matter (`version`, `variables`), the system part, a `=== user ===` line, and the
user template with `$name` placeholders. Values are cleaned of characters XML cannot hold and escaped when
substituted; variables whose name ends in `_xml` carry XML built with `xml_text` (see `transcript`) and go
in as they are. What members control (names, messages, facts, summaries) may only appear in the user part,
inside data elements: the system part takes only the operator's and the clock's values (SYSTEM_VARIABLES),
and a prompt file that breaks this rule fails at start-up.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template
from typing import Any
from xml.sax.saxutils import escape
from zoneinfo import ZoneInfo

from bot.llm.types import Prompt
from bot.text import clean


def _prompts_dir() -> Traversable:
    """The prompt files: the installed package `elefant_prompts` (a wheel, or an editable install, which maps it
    to the checkout's prompts/), else the checkout's prompts/ beside bot/ (run from the source tree)."""
    try:
        return importlib.resources.files("elefant_prompts")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "prompts"


PROMPTS_DIR = _prompts_dir()
OPERATIONS = (
    "remember",
    "forget",
    "condense",
    "route",
    "daily_summary",
    "historical_summary",
    "merge_context",
    "chat",
    "recap",
)
_SPLIT = re.compile(r"^=== user ===$", re.M)
# Values no member writes: the bot's configured name, dates, times, sizes. Nothing else enters the system part.
SYSTEM_VARIABLES = frozenset(
    {"bot_name", "today", "timezone", "day", "start_day", "end_day", "max_chars", "max_tokens", "note_tokens"}
)


def xml_text(value: object) -> str:
    """A value as XML character data: characters XML cannot hold removed, markup escaped."""
    return escape(clean(str(value)))


class PromptError(Exception):
    """A prompt file is missing or does not match its declared variables."""


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """One operation's prompt."""

    name: str
    version: str
    variables: frozenset[str]
    system: Template
    user: Template

    def render(self, values: Mapping[str, Any]) -> Prompt:
        """Substitute `values` (escaped); a missing variable raises PromptError."""
        missing = self.variables - values.keys()
        if missing:
            raise PromptError(f"prompt {self.name!r} needs {sorted(missing)}")
        safe = {k: (str(v) if k.endswith("_xml") else xml_text(v)) for k, v in values.items()}
        return Prompt(system=self.system.substitute(safe), user=self.user.substitute(safe))


@dataclass(frozen=True, slots=True)
class ChatLine:
    """One message as the model sees it: names, not IDs, in the content."""

    timestamp: datetime
    author_id: int
    author: str
    content: str


def when(now: datetime, zone: str) -> dict[str, str]:
    """The `today` and `timezone` variables every dated prompt states."""
    return {"today": now.astimezone(ZoneInfo(zone)).strftime("%A %Y-%m-%d %H:%M"), "timezone": zone}


def transcript(lines: Iterable[ChatLine]) -> str:
    """Messages as escaped XML elements, so chat text can never close them and act as instructions."""
    return "\n".join(
        "<message>"
        f"<timestamp>{line.timestamp.isoformat(timespec='minutes')}</timestamp>"
        f"<author_id>{line.author_id}</author_id>"
        f"<author>{xml_text(line.author)}</author>"
        f"<content>{xml_text(line.content)}</content>"
        "</message>"
        for line in lines
    )


def _parse(path: Traversable) -> PromptTemplate:
    raw = path.read_text(encoding="utf-8")
    if not raw.startswith("---\n") or "\n---\n" not in raw[4:]:
        raise PromptError(f"{path.name}: missing front matter")
    header, body = raw[4:].split("\n---\n", 1)
    meta = dict(line.split(":", 1) for line in header.splitlines() if ":" in line)
    version = meta.get("version", "").strip()
    declared = frozenset(v.strip() for v in meta.get("variables", "").strip(" []").split(",") if v.strip())
    parts = _SPLIT.split(body, maxsplit=1)
    if not version or len(parts) != 2:
        raise PromptError(f"{path.name}: needs a version and a '=== user ===' line")
    system, user = Template(parts[0].strip()), Template(parts[1].strip())
    used = frozenset(system.get_identifiers()) | frozenset(user.get_identifiers())
    if used != declared or not (system.is_valid() and user.is_valid()):
        raise PromptError(f"{path.name}: placeholders {sorted(used)} differ from variables {sorted(declared)}")
    if member_text := set(system.get_identifiers()) - SYSTEM_VARIABLES:
        raise PromptError(f"{path.name}: {sorted(member_text)} may only appear in the user part, in a data element")
    return PromptTemplate(path.name.removesuffix(".md"), version, declared, system, user)


def load_prompts(
    directory: Traversable = PROMPTS_DIR, *, operations: Iterable[str] = OPERATIONS
) -> dict[str, PromptTemplate]:
    """Load and check every operation's prompt; fails at start-up, not at the first message. `operations`: the bot's
    by default; a benchmark names its own (`judge`, bench/answers_judge.py), which the bot never loads."""
    prompts = {}
    for operation in operations:
        path = directory / f"{operation}.md"
        if not path.is_file():
            raise PromptError(f"prompt file {path} is missing")
        prompts[operation] = _parse(path)
    return prompts
