"""The install's pieces agree, not one module: every package bot/ and db/ import is declared in pyproject.toml and
pinned in the runtime lock, which holds the dev lock's versions and no dev tools; the Makefile installs the
weights the missing-weights sentence names."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from bot.llm.local_embedder import WEIGHTS

ROOT = Path(__file__).resolve().parents[1]
DEV_TOOLS = {"pytest", "mypy", "ruff", "hypothesis", "dpytest", "pytest-xdist", "setuptools"}


def _name(requirement: str) -> str:
    """A requirement's project name as locks write it (PEP 503: lower case, runs of -_. as one -)."""
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text()
    return {_name(name): version for name, version in re.findall(r"^([A-Za-z0-9][^=\s]*)==([^\s;]+)", text, re.M)}


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_name(requirement) for requirement in project["dependencies"]}


def _imported() -> set[str]:
    """Top-level names bot/ and db/ import that are neither the standard library nor their own."""
    names = set()
    for path in [*ROOT.glob("bot/**/*.py"), *ROOT.glob("db/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in {"__future__", "bot", "db"}}


def test_every_imported_package_is_declared():
    declared = _declared()
    owners = packages_distributions()
    undeclared = {name for name in _imported() if not {_name(d) for d in owners.get(name, [])} & declared}
    assert not undeclared, f"imported but not in pyproject.toml's dependencies: {sorted(undeclared)}"


def test_the_runtime_lock_pins_what_runs_at_the_dev_locks_versions():
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    assert _declared() <= runtime.keys()
    assert {name: dev.get(name) for name in runtime} == runtime
    assert not DEV_TOOLS & runtime.keys()
    assert dev.keys() >= DEV_TOOLS


def test_the_makefile_installs_the_weights_the_refusal_names():
    (weights,) = re.findall(r"^WEIGHTS := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert weights == WEIGHTS
