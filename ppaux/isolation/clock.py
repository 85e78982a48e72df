"""Time as a seam: the loops that wait on the code under test or on child processes (the guard's
supervisor, the fuzz run's rounds, mutmut's baseline) read time and wait through a :class:`Clock`,
so their decisions are tested with a fake clock and scripted events instead of real seconds.

``safety_limit`` scales the generous limits that real-process tests and waits keep only as a
safety net, by one environment factor (``PPAUX_TIMEOUT_FACTOR``), as PyTorch's
``common_distributed`` scales ``TIMEOUT_DEFAULT`` on slow runners.
"""

from __future__ import annotations

import os
import time
from typing import Protocol

__all__ = ["MONOTONIC", "TIMEOUT_FACTOR_ENV", "Clock", "MonotonicClock", "safety_limit"]

TIMEOUT_FACTOR_ENV = "PPAUX_TIMEOUT_FACTOR"


class Clock(Protocol):
    """What a loop needs of time: a reading that only goes forward, and a pause."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never decreases."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        ...


class MonotonicClock:
    """The real clock: :func:`time.monotonic` and :func:`time.sleep`."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


MONOTONIC: Clock = MonotonicClock()


def safety_limit(seconds: float) -> float:
    """``seconds`` times ``$PPAUX_TIMEOUT_FACTOR`` (default 1): the limit of a wait that exists only
    so that a run ends, widened on a slow or busy machine without touching a verdict. A factor
    that is not a positive number is ignored (1)."""
    try:
        factor = float(os.environ.get(TIMEOUT_FACTOR_ENV, "1"))
    except ValueError:
        factor = 1.0
    return seconds * (factor if factor > 0 and factor != float("inf") else 1.0)
