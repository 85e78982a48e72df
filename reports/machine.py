"""How fast this machine is while a figure is taken: a shared machine's speed moves by a third within
minutes, more than most changes a benchmark compares, so each report says what it was."""

from __future__ import annotations

import statistics
import timeit

# The loop timed, as the reports that give its figure name it.
REFERENCE_LOOP = "sum(i * i for i in range(10**7))"


def speed_reference(repeat: int = 3) -> float:
    """Seconds for a fixed pure-Python loop (:data:`REFERENCE_LOOP`), the median of ``repeat``."""
    return statistics.median(timeit.repeat(REFERENCE_LOOP, repeat=repeat, number=1))
