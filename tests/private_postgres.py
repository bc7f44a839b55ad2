"""A PostgreSQL server of a test's own (initdb, pg_ctl on a free port), so the test may restart it.

As root (CI, this machine) the server runs as the `postgres` user: initdb refuses root. Where the binaries are
missing or cannot run, the test is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class PrivateServer:
    """A running server: its URL (database `elefant`) and how to restart it."""

    url: str
    data: Path
    pg_ctl: str
    as_user: list[str]
    options: str  # its port and socket directory: a start without them would be the shared server's 5432

    def restart(self) -> None:
        """Stop it fast (connections are cut, as in a crash or a deploy of the database) and start it again."""
        self._pg_ctl("restart", "-m", "fast", "-l", str(self.data.parent / "log"))

    def stop(self) -> None:
        """Stop it at once, as a crash of the database does (clients see their connections cut)."""
        self._pg_ctl("stop", "-m", "immediate")

    def start(self) -> None:
        """Start it again after `stop` (an outage as long as the caller waits in between)."""
        self._pg_ctl("start", "-o", self.options, "-l", str(self.data.parent / "log"))

    def _pg_ctl(self, *args: str) -> None:
        # Not captured: the server inherits pg_ctl's output, and a pipe would be held open for the server's life.
        command = [*self.as_user, self.pg_ctl, "-D", str(self.data), "-w", *args]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def private_postgres() -> Iterator[PrivateServer]:
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("initdb and pg_ctl are not on PATH: no private PostgreSQL server to restart")
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="elefant-pg-"))  # short: the socket's path is limited to ~100 bytes
    if os.geteuid() == 0:
        if not shutil.which("runuser"):
            pytest.skip("running as root without runuser: initdb refuses root")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    data, port = root / "data", _free_port()
    try:
        subprocess.run(
            [*as_user, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        subprocess.run(
            [*as_user, "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "elefant"],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"could not start a private PostgreSQL server: {exc!r}")
    server = PrivateServer(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/elefant", data, pg_ctl, as_user, options)
    try:
        yield server
    finally:
        stop = [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"]
        subprocess.run(stop, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)
