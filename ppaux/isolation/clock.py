"""The time a supervisor and a guard read, as a seam: the system's monotonic clock in a run, a
fake one in a test that scripts what a child does and when."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What the guard and the supervisors read of time."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary start, never going back (:func:`time.monotonic`)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        ...


class SystemClock:
    """The system's monotonic clock: the same in every process of the machine, so that a deadline a
    child writes into shared memory reads the same in its supervisor."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM = SystemClock()
