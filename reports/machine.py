"""How fast this machine is while a figure is taken: a shared machine's speed moves by a third within
minutes, more than most changes a benchmark compares, so each report says what it was. And what a
command a benchmark runs cost in CPU time, beside its wall time."""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
import timeit
from collections.abc import Sequence
from typing import Any, NamedTuple

# The loop timed, as the reports that give its figure name it.
REFERENCE_LOOP = "sum(i * i for i in range(10**7))"


def speed_reference(repeat: int = 3) -> float:
    """Seconds for a fixed pure-Python loop (:data:`REFERENCE_LOOP`), the median of ``repeat``."""
    return statistics.median(timeit.repeat(REFERENCE_LOOP, repeat=repeat, number=1))


class CPUTime(NamedTuple):
    """User and system CPU seconds."""

    user: float
    system: float

    @property
    def total(self) -> float:
        return self.user + self.system


def children_cpu() -> CPUTime:
    """The CPU time so far of the child processes this process has waited for (and of theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return CPUTime(usage.ru_utime, usage.ru_stime)


class TimedRun(NamedTuple):
    """A command a benchmark ran: how it ended, its wall seconds, and its CPU time."""

    done: subprocess.CompletedProcess[Any]
    wall: float
    cpu: CPUTime

    @property
    def said_last(self) -> str:
        """The command's last line of output that is not blank (pytest's summary line), or, where it printed
        none, the end of what it wrote to standard error (run with its output captured as text)."""
        lines = [line for line in str(self.done.stdout).splitlines() if line.strip()]
        return lines[-1] if lines else str(self.done.stderr).strip()[-200:]


def timed_run(command: Sequence[str], **kwargs: Any) -> TimedRun:
    """Run ``command`` to its end (``kwargs`` as :func:`subprocess.run` takes them) and time it: its CPU
    time is the children's before and after, so it counts whatever the command started and waited for."""
    before, start = children_cpu(), time.perf_counter()
    done = subprocess.run(list(command), **kwargs)
    wall, after = time.perf_counter() - start, children_cpu()
    return TimedRun(done, wall, CPUTime(after.user - before.user, after.system - before.system))
