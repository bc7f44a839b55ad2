"""The suite holds on a busy machine: a hang ends its own test by name, the run goes on, and what a test started dies
with it (issue 37, finding 14)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUCK = """\
import os
import signal
import subprocess
import sys
import time

from tests.children import die_with_parent


def test_stuck():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=die_with_parent)
    with open(os.environ["CHILD_PID_FILE"], "w") as pid_file:
        pid_file.write(str(child.pid))
    signal.signal(signal.SIGALRM, signal.SIG_IGN)  # the per-test time-out cannot reach this hang
    time.sleep(600)


def test_after():
    pass
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_hang_fails_its_own_test_by_name_and_its_child_dies_with_it(tmp_path: Path) -> None:
    (tmp_path / "test_stuck.py").write_text(STUCK)
    command = [
        sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "tests.hang_guard", "-p", "no:cacheprovider",
        "--timeout", "2", "-o", "hang_guard_grace=2", "-o", "asyncio_default_fixture_loop_scope=function",
        "--rootdir", str(tmp_path), "test_stuck.py",
    ]  # fmt: skip
    pid_file = tmp_path / "child.pid"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CHILD_PID_FILE": str(pid_file)}
    started = time.monotonic()
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "test_stuck.py::test_stuck" in output and "crashed" in output, output
    assert "1 failed, 1 passed" in output, output  # the run went on to the next test
    assert time.monotonic() - started < 100  # a hang guard: the sleep is 600 s
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the child of the ended worker is still running"
