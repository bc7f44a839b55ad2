"""How this Elefant was started and installed, so that a command a sentence names is one the reader has.

A checkout runs `python -m bot`; a wheel or pipx install has the `elefant` script ([project.scripts] in
pyproject.toml), and the `python` on the reader's path there has no `bot`: a hint saying `python -m bot stats`
failed with "No module named bot". pipx keeps each app's venv to itself, so a package goes in through pipx, not pip.
"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = "elefant"
MODULE = "python -m bot"
# pipx writes this file into every venv it manages, wherever PIPX_HOME puts them.
PIPX_METADATA = "pipx_metadata.json"


def command_name() -> str:
    """`elefant` when this process is the installed script, `python -m bot` otherwise.

    The script is run as a plain file (`__main__` has no module spec, as it has under `python -m`) named after the
    command; anything else (a test runner, an embedding program) gets the checkout's spelling.
    """
    main = sys.modules.get("__main__")
    if getattr(main, "__spec__", None) is None and Path(sys.argv[0]).stem == SCRIPT:
        return SCRIPT
    return MODULE


def pipx_environment(prefix: str | None = None) -> str | None:
    """The name of the pipx venv this Python runs in (pipx's name for it, suffix included), or None outside one."""
    venv = Path(prefix if prefix is not None else sys.prefix)
    return venv.name if (venv / PIPX_METADATA).is_file() else None


def install_without_dependencies(requirement: str, *, prefix: str | None = None) -> str:
    """The command that installs REQUIREMENT alone, without its declared dependencies, into this Elefant's venv.

    In a pipx venv: `pipx runpip`. `pipx inject --pip-args=--no-deps` installs the package but then fails
    ("Pipx Internal Error: cannot find package … metadata", pypa/pipx#1104) on the dependencies left out.
    """
    environment = pipx_environment(prefix)
    if environment is not None:
        return f"pipx runpip {environment} install --no-deps {requirement}"
    return f"pip install --no-deps {requirement}"
