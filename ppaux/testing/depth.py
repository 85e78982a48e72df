"""How deep a run of the suite reaches: its scope (the strategies' size bounds) and swarm configuration
(the features it keeps), as pytest options (``--ppaux-scope``, ``--ppaux-swarm``) and as the plain JSON
objects that reports record and replays read back (:mod:`ppaux_strategies.scope` has the knobs).

The fuzz job reads depth only through here (it draws no examples itself).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis.errors import InvalidArgument
from ppaux_strategies.scope import SCOPES, Scope, Swarm, parse_scope, parse_swarm
from ppaux_strategies.tensors import ALL_DTYPES, VIEWS

__all__ = [
    "LARGEST",
    "TUNING_SCOPES",
    "DepthError",
    "drawn_swarm",
    "grown_scope",
    "read_depth",
    "scope_options",
]

# The scope of each of ppaux's tunings: CI draws small on purpose (fast, one verdict); the nightly run
# draws large. A profile ppaux has no tuning for draws small, as the suite always has.
TUNING_SCOPES = {"ci": "small", "mutation": "small", "dev": "medium", "nightly": "large"}
LARGEST = "large"


class DepthError(ValueError):
    """A ``--ppaux-scope`` or ``--ppaux-swarm`` that does not parse: one line for the user."""


def read_depth(scope: str | None, swarm: str | None, tuning: str | None) -> tuple[Scope, Swarm | None]:
    """The run's scope (``scope`` if given, else its tuning's) and swarm configuration (``None``: none)."""
    try:
        return (
            parse_scope(scope if scope is not None else TUNING_SCOPES.get(tuning or "", "small")),
            None if swarm is None else parse_swarm(swarm),
        )
    except InvalidArgument as exc:
        raise DepthError(str(exc)) from None


def grown_scope(size: float) -> dict[str, Any]:
    """The scope ``size`` of the way (0 to 1) from small to large, as a report records it."""
    return SCOPES[LARGEST].at(min(1.0, max(0.0, size))).as_dict()


def drawn_swarm(seed: int) -> dict[str, Any]:
    """The swarm configuration of ``seed`` (the same on every machine), as a report records it."""
    names = tuple(str(dt).removeprefix("torch.") for dt in ALL_DTYPES)
    return Swarm.draw(seed, names, VIEWS).as_dict()


def scope_options(scope: Mapping[str, Any] | None, swarm: Mapping[str, Any] | None) -> list[str]:
    """The pytest options that run the suite at ``scope`` with ``swarm`` (as :func:`grown_scope` and
    :func:`drawn_swarm` give them; ``None``: the run's default)."""
    options = [] if scope is None else ["--ppaux-scope", json.dumps(scope, sort_keys=True)]
    return options + ([] if swarm is None else ["--ppaux-swarm", json.dumps(swarm, sort_keys=True)])
