"""Findings an upstream can merge: each broken clause of a conformance run becomes one standalone
regression test file (unittest and torch only, importing the implementation's own module), proven
to fail against the implementation and to pass against ppaux's reference before it is written.

``ppaux check --regressions DIR`` calls :func:`write_regressions` on its report.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ppaux.regressions.expect import expected_steps
from ppaux.regressions.prove import PROOF_SECONDS, judge, prove_files
from ppaux.regressions.render import (
    MARKER,
    RegressionCase,
    class_name,
    file_name,
    method_lines,
    method_name,
    module_of,
    render,
)
from ppaux.report import (
    ConformanceReport,
    RefusedFinding,
    RegressionFile,
    RegressionSummary,
    TestOutcome,
    WrittenRegressions,
    write_atomic,
)
from ppaux.testing.impl import DEFAULT_IMPL
from ppaux.testing.scenario import Unwritable

__all__ = ["MARKER", "module_search_path", "stale_files", "with_regressions", "write_regressions"]


def module_search_path(spec: str, cwd: Path) -> list[str]:
    """Where the proofs find the implementation's module: a file's own directory, the user's
    directory, then their PYTHONPATH (as the module was imported for the run)."""
    own = [str(Path(spec).parent)] if Path(spec).is_file() else []
    return own + [str(cwd), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]


def stale_files(directory: Path) -> list[Path]:
    """The regression files an earlier run wrote in ``directory`` (they start with :data:`MARKER`)."""
    found = []
    for path in sorted(directory.glob("test_*.py")):
        with path.open("rb") as f:
            if f.read(len(MARKER)) == MARKER.encode():
                found.append(path)
    return found


def _finding(clause: str, test: TestOutcome, taken: set[str]) -> RegressionCase:
    scenario = test.scenario
    if not scenario:
        raise Unwritable(test.scenario_error or "the test's calls were not recorded")
    return RegressionCase(
        test.nodeid,
        clause,
        test.finding,
        expected_steps(scenario),
        scenario["doubles"],
        method=method_name(test.nodeid, taken),
    )


def _clause_findings(clause: str, tests: Sequence[TestOutcome], refused: list[RefusedFinding]) -> list[RegressionCase]:
    taken: set[str] = set()
    found = []
    for test in tests:
        if test.outcome != "failed":
            continue
        try:
            found.append(_finding(clause, test, taken))
        except Unwritable as exc:
            refused.append(RefusedFinding(clause, test.nodeid, str(exc)))
    return found


def _prove_rounds(
    broken: dict[str, list[RegressionCase]],
    spec: str,
    timeout: float,
    user_path: list[str],
    refused: list[RefusedFinding],
) -> dict[str, tuple[str, list[RegressionCase]]]:
    """Each clause's file and the findings in it, those whose tests discriminate; a finding whose test
    does not is dropped (and said why), and the clause's file is proven again without it."""
    module, _ = module_of(spec)
    proven: dict[str, tuple[str, list[RegressionCase]]] = {}
    while broken:
        sources = {clause: render(clause, found, spec, timeout) for clause, found in broken.items()}
        hangs = sum(1 for found in broken.values() for f in found if f.kind)
        verdicts = prove_files(
            {file_name(c): source for c, source in sources.items()}, module, user_path, PROOF_SECONDS + timeout * hangs
        )
        again = {}
        for clause, found in broken.items():
            verdict = verdicts[file_name(clause)]
            why = {id(f): judge(verdict.red, verdict.green, f.method) for f in found}
            refused += [RefusedFinding(clause, f.nodeid, reason) for f in found if (reason := why[id(f)])]
            kept = [f for f in found if not why[id(f)]]
            if len(kept) == len(found):
                proven[clause] = (sources[clause], kept)
            elif kept:
                again[clause] = kept
        broken = again
    return proven


def write_regressions(
    failed: Mapping[str, Sequence[TestOutcome]], spec: str, directory: Path, timeout: float, user_path: list[str]
) -> tuple[RegressionSummary, dict[str, RegressionFile]]:
    """Write one proven regression file per broken clause into ``directory``: ``failed`` maps each
    clause to its tests (the failed ones become regression tests).

    Files an earlier run wrote there are removed first. Returns what was written, removed and
    refused, and for each failing test (by node id) its file, method and code, or why it could not
    become a regression test.
    """
    removed = stale_files(directory)
    for path in removed:
        path.unlink()
    refused: list[RefusedFinding] = []
    found = {clause: _clause_findings(clause, tests, refused) for clause, tests in failed.items()}
    findings = {clause: cases for clause, cases in found.items() if cases}
    proven = _prove_rounds(findings, spec, timeout, user_path, refused)
    regression_of = {r.nodeid: RegressionFile(why=r.why) for r in refused}
    files = []
    for clause, (source, kept) in proven.items():
        path = directory / file_name(clause)
        write_atomic(path, source)
        for f in kept:
            code = "\n".join(line[4:] for line in method_lines(f, timeout))
            test = f"{path.stem}.{class_name(clause)}.{f.method}"
            regression_of[f.nodeid] = RegressionFile(path=str(path), test=test, code=code)
        files.append(WrittenRegressions(clause, str(path), tuple(f.method for f in kept)))
    summary = RegressionSummary(str(directory), tuple(files), tuple(refused), tuple(str(p) for p in removed))
    return summary, regression_of


def with_regressions(report: ConformanceReport, spec: str, directory: Path, timeout: float) -> ConformanceReport:
    """``report`` with the regression files of its broken clauses written into ``directory``
    (:func:`write_regressions`; a passing report only clears an earlier run's files), each failing
    test naming its file, and the summary of what was written, removed and refused."""
    failed = {c.clause: c.tests for c in report.clauses if c.verdict == "fail"}
    summary, regression_of = write_regressions(
        failed, spec or DEFAULT_IMPL, directory, timeout, module_search_path(spec, Path.cwd()) if failed else []
    )
    clauses = tuple(
        replace(c, tests=tuple(replace(t, regression=regression_of.get(t.nodeid, t.regression)) for t in c.tests))
        for c in report.clauses
    )
    return replace(report, clauses=clauses, regressions=summary)
