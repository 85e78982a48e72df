"""The fault matrix (``ppaux faults``'s faults-<channel>[-integrity].json) as typed data: each named
fault through a real PP ring, its outcome at the popping stage against the expected one, and over
SGLang's own code ppaux's model's outcome beside it.

The model holds plain values (fault names, outcome strings): the relay runs the faults and the
command line builds the report from its cells (:func:`ppaux.cli.faults.build_report`). ``from_json``
refuses a file of another format version with one line (:mod:`ppaux.report.versions`); the JSON
Schema ships beside this module (``schemas/faults.schema.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ppaux.report.conformance import Verdict
from ppaux.report.versions import SCHEMA_VERSIONS, check_version

__all__ = ["SILENT_CORRUPTION", "FaultCell", "FaultOutcome", "FaultsReport"]

# The outcome the matrix counts: pop succeeded and the observer got something other than was sent.
SILENT_CORRUPTION = "silent corruption"

# Any: JSON as json.loads gives it, read by the one function that checks each field it takes.
_JSON = Mapping[str, Any]


@dataclass(frozen=True)
class FaultOutcome:
    """How one run with a fault ended at the popping stage (one of the relay's outcomes) and what showed it."""

    outcome: str
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"outcome": self.outcome, "detail": self.detail}


@dataclass(frozen=True)
class FaultCell:
    """One fault of the matrix: what it ``does``, how the run with it ended, the outcome the test
    suite asserts (``expected``), and over SGLang's code ppaux's model's outcome (``model``)."""

    does: str
    outcome: str
    detail: str
    expected: str
    model: FaultOutcome | None = None

    @property
    def differs(self) -> bool:
        """Whether the outcome is not the expected one, or not the model's."""
        return self.outcome != self.expected or (self.model is not None and self.model.outcome != self.outcome)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "does": self.does,
            "outcome": self.outcome,
            "detail": self.detail,
            "expected": self.expected,
        }
        if self.model is not None:
            out["model"] = self.model.to_json()
        return out

    @classmethod
    def from_json(cls, data: _JSON) -> FaultCell:
        model = data.get("model")
        return cls(
            data["does"],
            data["outcome"],
            data["detail"],
            data["expected"],
            None if model is None else FaultOutcome(model["outcome"], model["detail"]),
        )


@dataclass(frozen=True)
class FaultsReport:
    """``ppaux faults``' report: the channel and mode, each fault's cell in the matrix's order, and
    the verdict: ``pass`` when every cell is the expected outcome (and, over SGLang's code, the
    model's), as the exit status says (0 or 1)."""

    channel: str
    integrity: bool
    cells: Mapping[str, FaultCell]
    kind: str = field(default="faults", init=False)
    schema_version: int = field(default=SCHEMA_VERSIONS["faults"], init=False)

    @property
    def verdict(self) -> Verdict:
        return "fail" if self.differs else "pass"

    @property
    def differs(self) -> list[str]:
        """The faults whose outcome is not the expected one, or not the model's."""
        return [name for name, cell in self.cells.items() if cell.differs]

    @property
    def silent_corruptions(self) -> list[str]:
        return [name for name, cell in self.cells.items() if cell.outcome == SILENT_CORRUPTION]

    @property
    def with_model(self) -> bool:
        """Whether ppaux's model's column stands beside the outcomes (a run over SGLang's code)."""
        return any(cell.model is not None for cell in self.cells.values())

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "channel": self.channel,
            "integrity": self.integrity,
            "verdict": self.verdict,
            "differs": self.differs,
            "silent_corruptions": self.silent_corruptions,
            "cells": {name: cell.to_json() for name, cell in self.cells.items()},
        }

    @classmethod
    def from_json(cls, data: _JSON) -> FaultsReport:
        """The report ``to_json`` gave; :class:`~ppaux.report.versions.ReportFormatError` for a
        file of another format version."""
        check_version(data, "faults")
        cells = {name: FaultCell.from_json(cell) for name, cell in data["cells"].items()}
        return cls(channel=data["channel"], integrity=bool(data["integrity"]), cells=cells)
