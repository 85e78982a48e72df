"""Auxiliary outputs and sampling observers with known behaviour, for drawing and asserting.

Each one records how it was used so that a property can check call counts and identity.
Their reprs are short so that a minimal counterexample reads as one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


class ObserverFailure(Exception):
    """Raised on purpose by a double: it must propagate out of add/pop unchanged."""


class PPOutput:
    """A PP-capable auxiliary output whose ``to_pp_tensors()`` returns ``payload``."""

    def __init__(self, payload: object) -> None:
        self.payload = payload
        self.calls = 0

    def to_pp_tensors(self) -> object:
        self.calls += 1
        return self.payload

    def __repr__(self) -> str:
        return f"PPOutput({self.payload!r})"


class RaisingPPOutput:
    """A PP-capable output whose ``to_pp_tensors()`` raises ``ObserverFailure``."""

    def __init__(self) -> None:
        self.calls = 0
        self.error = ObserverFailure("to_pp_tensors failed")

    def to_pp_tensors(self) -> NoReturn:
        self.calls += 1
        raise self.error

    def __repr__(self) -> str:
        return "RaisingPPOutput()"


class NotPPOutput:
    """An auxiliary output without ``to_pp_tensors``: it does not support PP transport."""

    def __repr__(self) -> str:
        return "NotPPOutput()"


class Rebuilt:
    """What a recording observer returns: the names it was given, and nothing else."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def __repr__(self) -> str:
        return f"Rebuilt({self.names!r})"


OBSERVER_MODES = ("rebuild", "return_none", "raise", "drop_one", "add_one", "clear")


class RecordingObserver:
    """A PP-capable observer; ``mode`` says what ``from_pp_tensors`` does:

    ``rebuild`` returns a fresh :class:`Rebuilt`; ``return_none`` returns ``None``;
    ``raise`` raises :class:`ObserverFailure`; ``drop_one``, ``add_one`` and ``clear``
    mutate the dict they were given (as a careless plugin might) and then rebuild.
    """

    def __init__(self, mode: str = "rebuild") -> None:
        if mode not in OBSERVER_MODES:
            raise ValueError(f"mode={mode!r} must be one of {OBSERVER_MODES!r}")
        self.mode = mode
        self.calls: list[Mapping[str, object]] = []
        self.snapshots: list[dict[str, object]] = []
        self.returned: list[Rebuilt | None] = []
        self.error = ObserverFailure("from_pp_tensors failed")

    @property
    def mutates(self) -> bool:
        return self.mode in ("drop_one", "add_one", "clear")

    # Any: a careless plugin's observer changes the mapping it is handed, which the protocol types as a Mapping.
    def from_pp_tensors(self, tensors: Any) -> Rebuilt | None:
        self.calls.append(tensors)
        self.snapshots.append(dict(tensors))
        if self.mode == "raise":
            raise self.error
        if self.mode == "return_none":
            result = None
        else:
            result = Rebuilt(list(tensors))
        if self.mode == "drop_one":
            del tensors[next(iter(tensors))]
        elif self.mode == "add_one":
            tensors["added by observer"] = next(iter(tensors.values()))
        elif self.mode == "clear":
            tensors.clear()
        self.returned.append(result)
        return result

    def __repr__(self) -> str:
        return f"RecordingObserver({self.mode!r})"


class NotPPObserver:
    """A sampling observer without ``from_pp_tensors``: it does not support PP transport."""

    def __repr__(self) -> str:
        return "NotPPObserver()"
