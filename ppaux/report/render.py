"""Reports as people read them: the Markdown of each typed report, apart from the code that runs
things. (The reports page renders this Markdown as HTML; JUnit XML is pytest's own.)"""

from __future__ import annotations

import shlex
from pathlib import Path

from ppaux.report.conformance import ConformanceReport, RegressionSummary, TestOutcome

__all__ = ["FINDING_MEANS", "conformance_markdown"]

FINDING_MEANS = {
    "hang": "a call into the implementation did not return within its limit",
    "crash": "a call into the implementation ended its process",
}


def conformance_markdown(report: ConformanceReport) -> str:
    """conformance.md: the verdict line, the hangs and crashes, each clause's row, and each failure's
    counterexample with the advice that replays it; the regression files, if any were written."""
    counts = report.counts
    lines = [
        f"# Conformance report: `{report.implementation}`",
        "",
        f"Verdict: **{report.verdict.upper()}** (profile `{report.profile}`, tests `{report.marks}`, "
        f"per-call limit {report.timeout_s:g} s; "
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped)",
    ]
    found = ", ".join(
        f"{n} {kind}{'es' if n > 1 and kind == 'crash' else 's' if n > 1 else ''}: {FINDING_MEANS[kind]}"
        for kind, n in report.findings.items()
        if n
    )
    if found:
        lines += ["", f"Hangs and crashes: {found}."]
    if report.failed_clauses:
        lines += ["", f"Clauses broken: {', '.join(report.failed_clauses)}"]
    lines += ["", "| clause | verdict | statement | marks | tests |", "| --- | --- | --- | --- | --- |"]
    for c in report.clauses:
        lines.append(f"| {c.clause} | {c.verdict} | {c.statement} | {', '.join(c.marks)} | {len(c.tests)} |")
    failures = [(c, t) for c in report.clauses for t in c.tests if t.outcome == "failed"]
    if failures:
        lines += ["", "## Counterexamples"]
    for clause, test in failures:
        kind = f" ({test.finding})" if test.finding else ""
        lines += ["", f"### {clause.clause}{kind}: `{test.nodeid}`", ""]
        if clause.statement:
            lines += [f"Clause: {clause.statement}", ""]
        lines += [test.doc, "", f"Error: `{test.error or 'see the test output'}`", ""]
        if test.detail:
            lines += ["```", test.detail, "```", ""]
        if test.example:
            lines += ["```", test.example, "```", ""]
        lines += _replay(report, test) + _regression(test)
    lines += _regression_files(report.regressions)
    return "\n".join(lines).rstrip() + "\n"


def _replay(report: ConformanceReport, test: TestOutcome) -> list[str]:
    """Advice that works from an install: the command that replays the failure (the test file is in site-packages)."""
    name = test.nodeid.rsplit("::", 1)[-1].split("[", 1)[0]
    why = (
        "the `ci` profile draws the same examples on every run"
        if report.profile == "ci"
        else "the example database in `.hypothesis/` replays the saved example first"
    )
    lines = [f"Replay: `{report.command} --tests {shlex.quote(name)}` ({why})."] if report.command else []
    if test.blob:
        lines.append(f"Blob, for a copy of the test of your own: `{test.blob}` above it.")
    return lines + [""] if lines else []


def _regression(test: TestOutcome) -> list[str]:
    found = test.regression
    if found is None:
        return []
    if found.why is not None:
        return [f"No regression test: {found.why}.", ""]
    return [f"Regression test `{found.test}` in `{found.path}`:", "", "```python", found.code or "", "```", ""]


def _regression_files(summary: RegressionSummary | None) -> list[str]:
    if summary is None:
        return []
    lines = ["", "## Regression tests", "", f"Directory: `{summary.directory}`."]
    if summary.removed:
        lines.append(
            f"Replaced {len(summary.removed)} file(s) of an earlier run: "
            + ", ".join(f"`{Path(p).name}`" for p in summary.removed)
            + "."
        )
    lines += [""] + [f"- `{f['path']}` ({f['clause']}): {', '.join(f['tests'])}" for f in summary.files]
    if not summary.files:
        lines.append("- none written" + ("" if summary.refused else ": no clause is broken"))
    for r in summary.refused:
        lines.append(f"- not written for `{r['nodeid']}` ({r['clause']}): {r['why']}")
    lines.append("")
    if summary.files:
        lines.append(
            "Each file needs only torch and the implementation's module: `python -m unittest` or pytest on it."
        )
    return lines
