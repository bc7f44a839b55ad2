"""Processes a test starts die with the process that started them, however it ends.

A pytest worker killed by a hang guard (or by CI) would otherwise leave its bots running, holding memory and
database connections for the rest of the run (a fleet child ignores SIGTERM while it drains).

Passed as `preexec_fn`, which Python warns may deadlock in a forked child of a threaded process; what runs in the
child is one call through a function pointer resolved here, in the parent, so it takes no lock the fork could
have left held (no import, no dlopen, no allocation by Python beyond the call itself).
"""

from __future__ import annotations

import ctypes
import signal
import sys

_PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
_SIGKILL = int(signal.SIGKILL)


def die_with_parent() -> None:
    """SIGKILL this child when the thread that started it ends (Linux; elsewhere nothing)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, _SIGKILL)
