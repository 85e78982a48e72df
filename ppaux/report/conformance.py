"""The conformance report (``ppaux check``'s conformance.json) as typed data: each test's outcome,
each clause's verdict, the run's verdict, and the regression files written from it.

Built once from the rows the suite's run recorded (:meth:`ConformanceReport.build`), written with
:meth:`~ConformanceReport.to_json` and read back with :meth:`~ConformanceReport.from_json`, which
refuses a file of another format version with one line (:mod:`ppaux.report.versions`). The JSON
Schema of what ``to_json`` gives ships beside this module (``schemas/conformance.schema.json``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from ppaux.core.clauses import CLAUSES, statement
from ppaux.report.versions import SCHEMA_VERSIONS, check_version

Verdict = Literal["pass", "fail"]
Outcome = Literal["passed", "failed", "skipped"]
FindingKind = Literal["hang", "crash"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "skipped")
FINDING_KINDS: tuple[FindingKind, ...] = ("hang", "crash")
UNCLASSIFIED = "unclassified"

# Any: JSON as json.loads gives it, read by the one function that checks each field it takes.
_JSON = Mapping[str, Any]


@dataclass(frozen=True)
class RegressionFile:
    """Where a failing test's regression test was written (``path``, ``test``: its unittest name,
    ``code``: its method), or ``why`` it could not be."""

    path: str | None = None
    test: str | None = None
    code: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class TestOutcome:
    """One test of the suite's run: what it checks and how it ended; a failure's error, the kind of
    finding (a hang or a crash) with where it was stuck or died, its minimal example and blob."""

    __test__ = False  # not a pytest test class, whatever its name

    nodeid: str
    clause: str | None
    outcome: Outcome
    marks: tuple[str, ...] = ()
    doc: str = ""
    error: str | None = None
    finding: FindingKind | None = None
    detail: str | None = None
    example: str | None = None
    blob: str | None = None
    scenario: Mapping[str, Any] | None = None  # the calls as code: prefix, steps, doubles
    scenario_error: str | None = None
    regression: RegressionFile | None = None

    @classmethod
    def from_json(cls, row: _JSON) -> TestOutcome:
        regression = row.get("regression")
        return cls(
            nodeid=row["nodeid"],
            clause=row.get("clause"),
            outcome=row["outcome"],
            marks=tuple(row.get("marks", ())),
            doc=row.get("doc", ""),
            error=row.get("error"),
            finding=row.get("finding"),
            detail=row.get("detail"),
            example=row.get("example"),
            blob=row.get("blob"),
            scenario=row.get("scenario"),
            scenario_error=row.get("scenario_error"),
            regression=RegressionFile(**regression) if regression else None,
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "nodeid": self.nodeid,
            "clause": self.clause,
            "marks": list(self.marks),
            "doc": self.doc,
            "outcome": self.outcome,
        }
        if self.outcome == "failed":  # a failure always says whether it has an example and a blob
            out.update(example=self.example, blob=self.blob)
        optional = {
            "error": self.error,
            "finding": self.finding,
            "detail": self.detail,
            "scenario": None if self.scenario is None else dict(self.scenario),
            "scenario_error": self.scenario_error,
        }
        out.update((k, v) for k, v in optional.items() if v is not None)
        if self.regression is not None:
            out["regression"] = {k: v for k, v in vars(self.regression).items() if v is not None}
        return out


@dataclass(frozen=True)
class ClauseResult:
    """A contract clause's verdict: it holds (``pass``) when none of its tests failed."""

    clause: str
    statement: str | None
    verdict: Verdict
    marks: tuple[str, ...]
    tests: tuple[TestOutcome, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "clause": self.clause,
            "statement": self.statement,
            "marks": list(self.marks),
            "verdict": self.verdict,
            "tests": [t.to_json() for t in self.tests],
        }


@dataclass(frozen=True)
class WrittenRegressions:
    """One broken clause's regression file: where it is and the test method of each finding in it."""

    clause: str
    path: str
    tests: tuple[str, ...]


@dataclass(frozen=True)
class RefusedFinding:
    """A failing test that did not become a regression test, and why."""

    clause: str
    nodeid: str
    why: str


@dataclass(frozen=True)
class RegressionSummary:
    """What ``--regressions`` did: the files written (each a clause's, with its test methods), the
    findings refused, and the files of an earlier run removed."""

    directory: str
    files: tuple[WrittenRegressions, ...] = ()
    refused: tuple[RefusedFinding, ...] = ()
    removed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "directory": self.directory,
            "files": [{"clause": f.clause, "path": f.path, "tests": list(f.tests)} for f in self.files],
            "refused": [{"clause": r.clause, "nodeid": r.nodeid, "why": r.why} for r in self.refused],
            "removed": list(self.removed),
        }

    @classmethod
    def from_json(cls, data: _JSON) -> RegressionSummary:
        return cls(
            directory=data["directory"],
            files=tuple(WrittenRegressions(f["clause"], f["path"], tuple(f["tests"])) for f in data["files"]),
            refused=tuple(RefusedFinding(r["clause"], r["nodeid"], r["why"]) for r in data["refused"]),
            removed=tuple(data["removed"]),
        )


@dataclass(frozen=True)
class ConformanceReport:
    """``ppaux check``'s report: the implementation, how it was checked (``command`` runs the check
    again), the run's verdict, and each clause's, in the contract's order."""

    implementation: str
    profile: str
    marks: str
    timeout_s: float
    verdict: Verdict
    clauses: tuple[ClauseResult, ...]
    command: str = ""
    regressions: RegressionSummary | None = None
    kind: str = field(default="conformance", init=False)
    schema_version: int = field(default=SCHEMA_VERSIONS["conformance"], init=False)

    @classmethod
    def build(
        cls,
        rows: Iterable[TestOutcome],
        *,
        implementation: str,
        profile: str,
        marks: str,
        timeout_s: float,
        command: str = "",
    ) -> ConformanceReport:
        """Group the tests by contract clause, in the contract's order (clauses it does not know, a
        user's own or none, after, as first seen); a run with no test at all fails."""
        grouped: dict[str, list[TestOutcome]] = {}
        for test in rows:
            grouped.setdefault(test.clause or UNCLASSIFIED, []).append(test)
        order = {clause_id: i for i, clause_id in enumerate(CLAUSES)}
        clauses = tuple(
            ClauseResult(
                clause=key,
                statement=statement(None if key == UNCLASSIFIED else key),
                verdict="fail" if any(t.outcome == "failed" for t in tests) else "pass",
                marks=tuple(sorted({m for t in tests for m in t.marks})),
                tests=tuple(tests),
            )
            for key, tests in sorted(grouped.items(), key=lambda kv: order.get(kv[0], len(order)))
        )
        failed = any(c.verdict == "fail" for c in clauses) or not clauses
        return cls(implementation, profile, marks, timeout_s, "fail" if failed else "pass", clauses, command)

    @property
    def tests(self) -> tuple[TestOutcome, ...]:
        return tuple(t for c in self.clauses for t in c.tests)

    @property
    def counts(self) -> dict[Outcome, int]:
        return {o: sum(t.outcome == o for t in self.tests) for o in OUTCOMES}

    @property
    def failed_clauses(self) -> list[str]:
        return [c.clause for c in self.clauses if c.verdict == "fail"]

    @property
    def findings(self) -> dict[FindingKind, int]:
        return {kind: sum(t.finding == kind for t in self.tests) for kind in FINDING_KINDS}

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "schema_version": self.schema_version,
            "implementation": self.implementation,
            "command": self.command,
            "profile": self.profile,
            "marks": self.marks,
            "timeout_s": self.timeout_s,
            "verdict": self.verdict,
            "counts": dict(self.counts),
            "failed_clauses": self.failed_clauses,
            "findings": dict(self.findings),
            "clauses": [c.to_json() for c in self.clauses],
        }
        if self.regressions is not None:
            out["regressions"] = self.regressions.to_json()
        return out

    @classmethod
    def from_json(cls, data: _JSON) -> ConformanceReport:
        """The report ``to_json`` gave; :class:`~ppaux.report.versions.ReportFormatError` for a
        file of another format version."""
        check_version(data, "conformance")
        clauses = tuple(
            ClauseResult(
                clause=c["clause"],
                statement=c["statement"],
                verdict=c["verdict"],
                marks=tuple(c["marks"]),
                tests=tuple(TestOutcome.from_json(t) for t in c["tests"]),
            )
            for c in data["clauses"]
        )
        found = data.get("regressions")
        regressions = None if found is None else RegressionSummary.from_json(found)
        return cls(
            implementation=data["implementation"],
            profile=data["profile"],
            marks=data["marks"],
            timeout_s=float(data["timeout_s"]),
            verdict=cast(Verdict, data["verdict"]),
            clauses=clauses,
            command=data.get("command", ""),
            regressions=regressions,
        )
