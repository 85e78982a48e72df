"""ppaux's reports as typed data, their JSON Schemas, and their rendering, in one place.

Each report kind is a dataclass with ``to_json``/``from_json`` and a ``schema_version``
(:data:`SCHEMA_VERSIONS`); a file of another version is refused with one line
(:class:`ReportFormatError`). The JSON Schema of each kind ships with the package
(:func:`schema`), so a CI job or a dashboard reads the files without reading ppaux's code.
Markdown is rendered in :mod:`ppaux.report.render`; files are written whole (:func:`write_atomic`).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ppaux.report.conformance import (
    ClauseResult,
    ConformanceReport,
    RefusedFinding,
    RegressionFile,
    RegressionSummary,
    TestOutcome,
    WrittenRegressions,
)
from ppaux.report.faults import FaultCell, FaultOutcome, FaultsReport
from ppaux.report.files import write_atomic, write_report
from ppaux.report.fuzz import FuzzFailure, FuzzReplayReport, FuzzRunReport
from ppaux.report.mutation import (
    BaselineComparison,
    Marking,
    ModuleScore,
    MutantResult,
    MutateReport,
    MutationReport,
    ReviewEntry,
    Survivor,
    SurvivorIdentity,
)
from ppaux.report.versions import SCHEMA_VERSIONS, ReportFormatError, check_version

__all__ = [
    "SCHEMA_VERSIONS",
    "ClauseResult",
    "ConformanceReport",
    "FuzzFailure",
    "FuzzReplayReport",
    "FuzzRunReport",
    "RegressionFile",
    "RefusedFinding",
    "RegressionSummary",
    "ReportFormatError",
    "TestOutcome",
    "WrittenRegressions",
    "check_version",
    "schema",
    "write_atomic",
    "write_report",
]
# The mutation reports (ppaux mutate's, a checkout's own run) and the fault matrix (issue 35).
__all__ += [
    "BaselineComparison",
    "FaultCell",
    "FaultOutcome",
    "FaultsReport",
    "Marking",
    "ModuleScore",
    "MutantResult",
    "MutateReport",
    "MutationReport",
    "ReviewEntry",
    "Survivor",
    "SurvivorIdentity",
]


def schema(kind: str) -> dict[str, Any]:  # Any: a JSON Schema document, as json.loads gives it
    """The JSON Schema (draft 2020-12) of the ``kind`` report ppaux writes, shipped with the package."""
    shipped = resources.files("ppaux.report").joinpath("schemas").joinpath(f"{kind}.schema.json")
    text = shipped.read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
