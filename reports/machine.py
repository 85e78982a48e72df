"""How fast this machine is while a figure is taken: a shared machine's speed moves by a third within
minutes, more than most changes a benchmark compares, so each report says what it was. And what a
command a benchmark runs cost in CPU time, beside its wall time."""

from __future__ import annotations

import resource
import statistics
import timeit
from typing import NamedTuple

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
    """The CPU time so far of the child processes this process has waited for (and of theirs): read before
    and after a command a benchmark runs, the difference is the command's, whatever it started."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return CPUTime(usage.ru_utime, usage.ru_stime)
