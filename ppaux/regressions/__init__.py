"""Findings an upstream can merge: each broken clause of a conformance run becomes one standalone
regression test file (unittest and torch only, importing the implementation's own module), proven
to fail against the implementation and to pass against ppaux's reference before it is written.

``ppaux check --regressions DIR`` calls :func:`write_regressions` on its report.
"""

from __future__ import annotations

import os
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
from ppaux.report import ConformanceReport
from ppaux.testing.impl import DEFAULT_IMPL
from ppaux.testing.results import JSONObject
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


def _finding(row: JSONObject, taken: set[str]) -> RegressionCase:
    scenario = row.get("scenario")
    if not scenario:
        raise Unwritable(row.get("scenario_error") or "the test's calls were not recorded")
    return RegressionCase(
        row["nodeid"],
        row["clause"],
        row.get("finding"),
        expected_steps(scenario),
        scenario["doubles"],
        method=method_name(row["nodeid"], taken),
    )


def _clause_findings(clause: JSONObject, refused: list[JSONObject]) -> list[tuple[RegressionCase, JSONObject]]:
    taken: set[str] = set()
    found = []
    for row in clause["tests"]:
        if row["outcome"] != "failed":
            continue
        try:
            found.append((_finding(row, taken), row))
        except Unwritable as exc:
            refused.append({"clause": clause["clause"], "nodeid": row["nodeid"], "why": str(exc)})
            row["regression"] = {"why": str(exc)}
    return found


def _prove_rounds(
    broken: dict[str, list[tuple[RegressionCase, JSONObject]]],
    spec: str,
    timeout: float,
    user_path: list[str],
    refused: list[JSONObject],
) -> dict[str, str]:
    """Each clause's file, holding the findings whose tests discriminate; a finding whose test does
    not is dropped (and said why), and the clause's file is proven again without it."""
    module, _ = module_of(spec)
    proven: dict[str, str] = {}
    while broken:
        sources = {clause: render(clause, [f for f, _ in found], spec, timeout) for clause, found in broken.items()}
        hangs = sum(1 for found in broken.values() for f, _ in found if f.kind)
        verdicts = prove_files(
            {file_name(c): source for c, source in sources.items()}, module, user_path, PROOF_SECONDS + timeout * hangs
        )
        again = {}
        for clause, found in broken.items():
            verdict = verdicts[file_name(clause)]
            why = {id(f): judge(verdict["red"], verdict["green"], f.method) for f, _ in found}
            for f, row in found:
                if why[id(f)]:
                    refused.append({"clause": clause, "nodeid": f.nodeid, "why": why[id(f)]})
                    row["regression"] = {"why": why[id(f)]}
            kept = [(f, row) for f, row in found if not why[id(f)]]
            if len(kept) == len(found):
                proven[clause] = sources[clause]
            elif kept:
                again[clause] = kept
        broken = again
    return proven


def write_regressions(
    report: JSONObject, spec: str, directory: Path, timeout: float, user_path: list[str]
) -> JSONObject:
    """Write one proven regression file per broken clause of ``report`` into ``directory``.

    Files an earlier run wrote there are removed first. Each failing test's row gains
    ``regression``: its file, method and code, or why it could not become a regression test.
    Returns what was written, removed and refused, for the report.
    """
    removed = stale_files(directory)
    for path in removed:
        path.unlink()
    refused: list[JSONObject] = []
    broken = {c["clause"]: _clause_findings(c, refused) for c in report["clauses"] if c["verdict"] == "fail"}
    findings = {clause: found for clause, found in broken.items() if found}
    proven = _prove_rounds(dict(findings), spec, timeout, user_path, refused)
    files = []
    for clause, source in proven.items():
        path = directory / file_name(clause)
        path.write_text(source)
        kept = [(f, row) for f, row in findings[clause] if "regression" not in row]
        for f, row in kept:
            code = "\n".join(line[4:] for line in method_lines(f, timeout))
            test = f"{path.stem}.{class_name(clause)}.{f.method}"
            row["regression"] = {"path": str(path), "test": test, "code": code}
        files.append({"clause": clause, "path": str(path), "tests": [f.method for f, _ in kept]})
    return {"directory": str(directory), "files": files, "refused": refused, "removed": [str(p) for p in removed]}


def with_regressions(report: ConformanceReport, spec: str, directory: Path, timeout: float) -> ConformanceReport:
    """``report`` with the regression files of its broken clauses written into ``directory``
    (:func:`write_regressions`; a passing report only clears an earlier run's files), each failing
    test naming its file, and the summary of what was written, removed and refused."""
    data = report.to_json()
    if report.verdict == "pass":
        summary = write_regressions({"clauses": []}, spec, directory, timeout, [])
    else:
        summary = write_regressions(
            data, spec or DEFAULT_IMPL, directory, timeout, module_search_path(spec, Path.cwd())
        )
    return ConformanceReport.from_json({**data, "regressions": summary})
