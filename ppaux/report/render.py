"""Reports as people read them: the Markdown of each typed report, apart from the code that runs
things. (The reports page renders this Markdown as HTML; JUnit XML is pytest's own.)"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from ppaux.report.conformance import ConformanceReport, RegressionSummary, TestOutcome
from ppaux.report.faults import FaultsReport
from ppaux.report.mutation import Marking, MutateReport, MutationReport, ReviewEntry

__all__ = ["FINDING_MEANS", "conformance_markdown"]
__all__ += ["faults_markdown", "markings_section", "mutate_markdown", "mutation_markdown"]

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


# --- the mutation reports: mutate.md (ppaux mutate) and mutation.md (ppaux's own runs) ----------


def _score_phrase(killed: int, counted: int, equivalent: int, score: float) -> str:
    """``**97.5%** (39/40 mutants killed; 2 judged equivalent)``: killed of the counted mutants."""
    judged = f"; {equivalent} judged equivalent" if equivalent else ""
    return f"**{score}%** ({killed}/{counted} mutants killed{judged})"


def _verdicts_line(verdicts: Mapping[str, int]) -> str:
    """mutmut's verdicts and how many mutants got each, as a list item."""
    return "- verdicts: " + ", ".join(f"{status} {n}" for status, n in verdicts.items())


def _diff_block(diff: str) -> list[str]:
    return ["```diff", diff.strip(), "```", ""]


def _stale_lines(stale: Sequence[str]) -> list[str]:
    if not stale:
        return []
    return ["## Stale equivalence entries (killed, or no such mutant)", "", *(f"- `{name}`" for name in stale)]


_UNMATCHED = "## Equivalence judgements that match no mutant, or several (the run fails)"
_REVIEW = "## Equivalence judgements to review (their function changed since)"


def _review_line(entry: ReviewEntry) -> str:
    return f"- {entry.entry}: now `{entry.mutant}`, function_hash `{entry.function_hash}`"


def mutate_markdown(report: MutateReport) -> str:
    """``mutate.md``: the score, the run's settings, the side-by-side table, every survivor with
    its diff, stale entries, the judgements that match no mutant and those to review."""
    score = _score_phrase(report.killed, report.counted, report.equivalent, report.score)
    lines = [
        f"# Mutation testing: `{report.implementation}`",
        "",
        f"- ppaux's conformance suite: {score}; "
        f"gate {report.gate}%: {'**pass**' if report.verdict == 'pass' else '**FAIL**'}",
        f"- module `{report.module}`, mutmut {report.mutmut}, profile `{report.profile}`, tests `{report.marks}`"
        + (f" and `-k {report.tests}`" if report.tests else "")
        + f": {report.kill_set} tests; wall time {report.wall_s} s",
        _verdicts_line(report.verdicts),
    ]
    if report.left_out:
        lines.append(
            "- left out of the kill set (robustness tests that fail on the unmutated module): "
            + ", ".join(f"`{n}`" for n in report.left_out)
        )
    if report.baseline is not None:
        b = report.baseline
        lines += ["", f"## Side by side with `{b.command}`", "", "| killed by | mutants |", "| --- | --- |"]
        lines += [f"| {side} | {n} |" for side, n in b.side_by_side.items()]
        lines += [
            "",
            f"ppaux's suite {report.score}%, the baseline {b.score}% of {report.counted} mutants"
            + (f" ({report.equivalent} judged equivalent left out)." if report.equivalent else "."),
        ]
    lines += ["", "## Survivors", ""]
    if not report.survivors:
        lines.append("None.")
    for m in report.survivors:
        who = "killed by ppaux's suite" if m.killed else "survives ppaux's suite"
        if m.baseline is not None:
            who += ", " + ("survives the baseline" if m.baseline == "survived" else "killed by the baseline")
        lines += [f"### `{m.mutant}` ({who})", ""]
        if m.equivalent:
            lines += [f"Judged equivalent: {m.equivalent}", ""]
        lines += [f"Changes `{m.line}`", "", *_diff_block(m.diff or "")]
    lines += _stale_lines(report.stale_equivalents)
    if report.unmatched_equivalents:
        lines += ["", _UNMATCHED, ""] + [f"- {line}" for line in report.unmatched_equivalents]
    if report.review_equivalents:
        lines += ["", _REVIEW, ""]
        lines += [_review_line(e) for e in report.review_equivalents]
    return "\n".join(lines).rstrip() + "\n"


def _marking_line(marking: Marking) -> str:
    said = [marking.reason] if marking.reason else []
    said += [f"**{marking.problem}**"] if marking.problem else []
    return f"- `{marking.where}`{' (block)' if marking.block else ''}: {' '.join(said)}"


def markings_section(markings: Sequence[Marking]) -> list[str]:
    """The section of the no-mutate markings, each with its reason and problem; none without any."""
    if not markings:
        return []
    return ["## Marked equivalent (`# pragma: no mutate`)", "", *(_marking_line(m) for m in markings)]


def mutation_markdown(report: MutationReport) -> str:
    """``mutation.md``: the score and gate, the table per module, the mutants judged equivalent,
    the stale entries, the judgements that match no mutant and those to review, the no-mutate
    markings, every survivor with its diff."""
    score = _score_phrase(report.killed, report.counted, report.equivalent, report.score)
    lines = [
        "# Mutation testing",
        "",
        f"- scope `{report.scope}`: {report.scope_doc}",
        f"- score: {score}; gate: {'**pass**' if report.verdict == 'pass' else '**FAIL**'}",
        f"- mutants run: {report.ran}, recorded results reused: {report.reused}",
        f"- wall time: {report.wall_s} s; mutmut {report.mutmut}; "
        f"command: `python -m reports mutation --scope {report.scope}"
        + "".join(f" --only '{p}'" for p in report.only)
        + "`",
        _verdicts_line(report.verdicts),
    ]
    lines += ["", "| module | mutants | killed | score | gate | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for module, m in report.modules.items():
        gate = "reported" if m.gate is None else f"{m.gate}%"
        verdict = "pass" if m.verdict == "pass" else "FAIL"
        lines.append(f"| {module} | {m.total} | {m.killed} | {m.score}% | {gate} | {verdict} |")
    source = ", ".join(f"`{f}`" for f in report.equivalents_files)
    lines += ["", "## Judged equivalent" + (f" ({source})" if source else ""), ""]
    lines += [f"- `{name}`: {why}" for name, why in sorted(report.judged_equivalent.items())] or ["None."]
    lines += [""]
    lines += [*_stale_lines(report.stale_equivalents), *([""] if report.stale_equivalents else [])]
    if report.unmatched_equivalents:
        lines += [_UNMATCHED, ""] + [f"- {line}" for line in report.unmatched_equivalents] + [""]
    if report.review_equivalents:
        lines += [_REVIEW, ""]
        lines += [_review_line(e) for e in report.review_equivalents]
        lines += [""]
    lines += markings_section(report.markings)
    lines += ["", "## Surviving mutants", ""]
    if not report.survivors:
        lines += ["None.", ""]
    for s in report.survivors:
        lines += [f"### `{s.mutant}` ({s.status})", "", *_diff_block(s.diff or "")]
    return "\n".join(lines).rstrip() + "\n"


# --- the fault matrix: faults-<channel>[-integrity].md ------------------------------------------


def faults_markdown(report: FaultsReport) -> str:
    """The matrix as Markdown: each fault's outcome against the expected one (marked where it
    differs); over SGLang's code, ppaux's model's column beside SGLang's; the silent corruptions."""
    model = report.with_model
    mode = "integrity mode" if report.integrity else "SGLang's wire (integrity off)"
    outcome = "SGLang's own code" if model else "outcome at the popping stage"
    beside = " ppaux's model (gloo) |" if model else ""
    rows = [
        f"### Fault matrix: {report.channel} channel, {mode}",
        "",
        f"| fault | what it does | {outcome} |{beside} expected | detail |",
        "| --- | --- | --- |" + (" --- |" if model else "") + " --- | --- |",
    ]
    for name, cell in report.cells.items():
        mark = "" if cell.expected == cell.outcome else " **(differs)**"
        side = ""
        if cell.model is not None:
            side = f" {cell.model.outcome}{'' if cell.model.outcome == cell.outcome else ' **(differs)**'} |"
        rows.append(
            f"| {name} | {cell.does} | {cell.outcome}{mark} |{side} {cell.expected} | {cell.detail.replace('|', '/')} |"
        )
    silent = report.silent_corruptions
    rows += ["", f"Silent corruptions: {len(silent)}" + (f" ({', '.join(silent)})" if silent else "")]
    return "\n".join(rows) + "\n"
