"""How deep each fuzz round reaches: its scope grows round by round (QuickCheck's size), and from its
second round on each worker's round draws a swarm configuration from its seed (Groce et al., ISSTA
2012). Both go to the round's pytest run as ppaux's plugin options, and into the report, so that a
replay runs each failure under the scope and configuration that found it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis.database import ExampleDatabase

from ppaux.report.fuzz import Depth
from ppaux.testing.depth import drawn_swarm, grown_scope, scope_options

__all__ = ["DEPTHS_KEY", "RAMP_ROUNDS", "RoundDepth", "recorded_depths", "round_depth", "saved_depths"]

# Where the example database keeps the depths its failures were found at: a replay from another machine,
# with nothing but the database (a shared Redis), replays each failure as it was found.
DEPTHS_KEY = b"ppaux-fuzz-depths"

# A worker's rounds reach the large scope by this round: 1/3 of the way, 2/3, then all of it.
RAMP_ROUNDS = 3


@dataclass(frozen=True)
class RoundDepth:
    """A round's scope and swarm configuration (``None``: every feature on), as the report records them."""

    scope: Depth | None = None
    swarm: Depth | None = None
    swarm_seed: int | None = None

    def options(self) -> list[str]:
        """The round's pytest options (``--ppaux-scope``, ``--ppaux-swarm``)."""
        return scope_options(self.scope, self.swarm)

    def record(self) -> dict[str, object]:
        """As a report and the example database record it."""
        return {"scope": self.scope, "swarm": self.swarm, "swarm_seed": self.swarm_seed}


def round_depth(round_no: int, seed: int | None, rng: random.Random, lead: int = 0) -> RoundDepth:
    """Round ``round_no`` (1-based) of a worker: the scope ``(round_no + lead) / RAMP_ROUNDS`` of the way to
    large (worker W leads by W - 1 rounds: a short run has a worker at each size early); the first round
    keeps every feature on, each later one draws its swarm configuration from ``seed`` (the round's, with
    ``--seed``; else one ``rng`` draws, recorded)."""
    scope = grown_scope((round_no + lead) / RAMP_ROUNDS)
    if round_no == 1:
        return RoundDepth(scope)
    swarm_seed = seed if seed is not None else rng.randrange(2**32)
    return RoundDepth(scope, drawn_swarm(swarm_seed), swarm_seed)


def recorded_depths(failures: Iterable[Mapping[str, Any]]) -> list[RoundDepth]:  # Any: JSON, as recorded
    """The distinct depths under which failures were found (in order of first finding), as the example
    database records them; a failure recorded with no depth replays under the default scope."""
    found: list[RoundDepth] = []
    for failure in failures:
        depth = RoundDepth(failure.get("scope"), failure.get("swarm"), failure.get("swarm_seed"))
        if depth not in found:
            found.append(depth)
    return found


def save_depth(db: ExampleDatabase, depth: RoundDepth) -> None:
    """Keep ``depth`` (a failure's) in the example database, beside the failures themselves."""
    db.save(DEPTHS_KEY, json.dumps(depth.record(), sort_keys=True).encode("utf-8"))


def saved_depths(db: ExampleDatabase) -> list[RoundDepth]:
    """The depths the database's failures were found at (:func:`save_depth`), in a stable order."""
    return recorded_depths(json.loads(value) for value in sorted(db.fetch(DEPTHS_KEY)))
