"""Signalling a child's whole process group: what the child started goes with it (a fuzz round's pytest
workers, the processes a mutant leaks)."""

from __future__ import annotations

import contextlib
import os


def signal_group(group: int, signum: int) -> None:
    """Send ``signum`` to every process of process group ``group``; a group whose processes have all
    ended already is left be (it is no error to stop what has stopped)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signum)
