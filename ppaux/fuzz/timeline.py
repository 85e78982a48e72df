"""Examples and distinct failures over time: one series per worker, one for the run, one for merged shards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Timeline", "add_up", "thin"]

# A point is [seconds since the start, examples so far, distinct failures so far].
Point = list[float]
# At least one point this often, so that a flat stretch still shows as time passing.
EVERY_S = 5.0


@dataclass
class Timeline:
    points: list[Point] = field(default_factory=list)

    def sample(self, elapsed: float, examples: int, failures: int, force: bool = False) -> None:
        point = [round(elapsed, 2), examples, failures]
        last = self.points[-1] if self.points else None
        if force or last is None or last[1:] != point[1:] or elapsed - last[0] >= EVERY_S:
            self.points.append(point)


def thin(points: Sequence[Point], limit: int) -> list[Point]:
    """At most ``limit`` points, evenly picked, the last one kept."""
    if len(points) <= limit:
        return list(points)
    step = len(points) / (limit - 1)
    return [points[int(i * step)] for i in range(limit - 1)] + [points[-1]]


def _at(points: Sequence[Point], t: float) -> Point:
    """The series' counts at time ``t``: its last point at or before ``t`` (0 before its first)."""
    found: Point = [t, 0, 0]
    for point in points:
        if point[0] > t:
            break
        found = point
    return found


def add_up(series: Sequence[Sequence[Point]]) -> list[Point]:
    """The total of several series (workers, or shards started together) at each time any of them moved.

    Each worker counts the failures it found first, and shards fuzz tests of their own, so no
    failure is counted twice.
    """
    times = sorted({p[0] for points in series for p in points})
    return [[t, sum(_at(s, t)[1] for s in series), sum(_at(s, t)[2] for s in series)] for t in times]
