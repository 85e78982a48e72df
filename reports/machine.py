"""How fast this machine is while a figure is taken: a shared machine's speed moves by a third within
minutes, more than most changes a benchmark compares, so each report says what it was."""

from __future__ import annotations

import statistics
import timeit


def speed_reference(repeat: int = 3) -> float:
    """Seconds for a fixed pure-Python loop (``sum(i * i for i in range(10**7))``), the median of ``repeat``."""
    return statistics.median(timeit.repeat("sum(i * i for i in range(10**7))", repeat=repeat, number=1))
