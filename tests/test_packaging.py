"""The wheel (what `pip install .` and pipx install), not one module: it carries every module of bot/ and db/,
the prompt files and the migrations, and an installed copy finds its prompts with importlib.resources."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bot.llm.prompts import OPERATIONS

ROOT = Path(__file__).resolve().parents[1]
# What setuptools reads to build the wheel; copied so the build leaves nothing (build/, *.egg-info) in the checkout.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "bot", "db", "prompts")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: offline, with the setuptools this environment has.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("elefant-*.whl")
    return built


def _sources(folder: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts}


@pytest.mark.slow
def test_the_wheel_carries_the_code_the_prompts_and_the_migrations(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"elefant_prompts/{operation}.md" for operation in OPERATIONS} <= names
    assert _sources("bot") | _sources("db") <= names, sorted((_sources("bot") | _sources("db")) - names)
    assert "db/migrations/env.py" in names and any(n.startswith("db/migrations/versions/0001_") for n in names)
    assert not any(name.startswith(("prompts/", "tests/", "bench/")) for name in names)


@pytest.mark.slow
def test_an_installed_copy_reads_its_own_prompts(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = (
        "import bot, sys\n"
        "from bot.llm.prompts import PROMPTS_DIR, load_prompts\n"
        "print(bot.__file__, PROMPTS_DIR, len(load_prompts()), sep='\\n')\n"
    )
    # The installed copy comes first on the path, so neither the checkout nor an editable install answers.
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    module, prompts, count = result.stdout.split()
    assert Path(module).is_relative_to(site) and Path(prompts) == site / "elefant_prompts"
    assert int(count) == len(OPERATIONS)
