"""Reports as people read them: the Markdown of each typed report, apart from the code that runs
things. (The reports page renders this Markdown as HTML; JUnit XML is pytest's own.)"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ppaux.isolation import describe_exitcode
from ppaux.report.conformance import ConformanceReport, RegressionSummary, TestOutcome
from ppaux.report.faults import FaultsReport
from ppaux.report.fuzz import FuzzFailure, FuzzReplayReport, FuzzRunReport
from ppaux.report.mutation import Marking, MutateReport, MutationReport, ReviewEntry

__all__ = [
    "FINDING_MEANS",
    "conformance_markdown",
    "format_duration",
    "fuzz_replay_markdown",
    "fuzz_run_markdown",
]
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
            lines += ["Minimal example:", "", "```", test.example, "```", ""]
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
    lines += [""] + [f"- `{f.path}` ({f.clause}): {', '.join(f.tests)}" for f in summary.files]
    if not summary.files:
        lines.append("- none written" + ("" if summary.refused else ": no clause is broken"))
    for r in summary.refused:
        lines.append(f"- not written for `{r.nodeid}` ({r.clause}): {r.why}")
    lines.append("")
    if summary.files:
        lines.append(
            "Each file needs only torch and the implementation's module: `python -m unittest` or pytest on it."
        )
    return lines


# The fuzz job's reports (fuzz.md, replay.md): ppaux.report.fuzz's typed reports as a person reads them.


def format_duration(seconds: float) -> str:
    """Whole seconds as ``MM:SS``, or ``H:MM:SS`` from an hour on: a fuzz budget, a run's time so far."""
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _depth_md(scope: Mapping[str, Any] | None, swarm: Mapping[str, Any] | None, swarm_seed: int | None) -> str:
    """A round's (or failure's) scope and swarm configuration in a few words: ``large@0.667, swarm 42``."""
    name = (scope or {}).get("name") or "-"
    return name if swarm is None else f"{name}, swarm {swarm_seed}"


def _fuzz_failure_md(f: FuzzFailure) -> list[str]:
    """A failure's section: its error, clause, where and how often it was found, its depth (every bound,
    so that ``--ppaux-scope``/``--ppaux-swarm`` reproduce it), minimal example, blob and failure text."""
    out = [f"### `{f.nodeid}`", ""]
    if f.error:
        out += [f"- error: `{f.error}`"]
    facts = (
        ("clause", f.clause),
        ("shard", f.shard),
        ("first found by worker", f.worker),
        ("in round", f.round),
        ("placements", list(f.placements) if f.placements else None),
        ("found after (s)", f.found_after_s),
        ("times seen", f.seen),
        ("saved examples", f.saved),
    )
    out += [f"- {label}: {value}" for label, value in facts if value is not None]
    if f.scope is not None:
        out.append(f"- scope: {_depth_md(f.scope, f.swarm, f.swarm_seed)}")
        out.append(f"- scope bounds: `{json.dumps(f.scope, sort_keys=True)}`")
    if f.swarm is not None:
        out.append(f"- swarm configuration: `{json.dumps(f.swarm, sort_keys=True)}`")
    out += ["", "Minimal example:", "", "```", (f.example or "(see the failure text)").strip(), "```", ""]
    if f.blob:
        out += ["Reproduce (decorate the test with):", "", "```python", f.blob, "```", ""]
    if f.text:
        out += ["<details><summary>failure text</summary>", "", "```", f.text.strip(), "```", "", "</details>", ""]
    return out


def _rounds_md(report: FuzzRunReport) -> list[str]:
    lines = [
        "| shard | worker | round | placement | examples/test | tests | examples | ended by | scope |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    return lines + [
        f"| {r.shard or report.shard or '-'} | {r.worker} | {r.round} | {r.placement} | "
        f"{r.max_examples} | {r.tests} | {r.examples:,} | {r.ended_by} | {_depth_md(r.scope, r.swarm, r.swarm_seed)} |"
        for r in report.rounds
    ]


def _dead_md(report: FuzzRunReport) -> list[str]:
    if not report.dead_workers:
        return []
    lines = [
        "",
        "## Dead workers",
        "",
        "A worker whose round ended without a verdict (killed, crashed): the others went on.",
        "",
    ]
    return lines + [
        f"- worker {d.worker}{' of shard ' + d.shard if d.shard else ''}: round {d.round} "
        f"({d.placement}), running `{d.test or 'no test yet'}`: {describe_exitcode(d.exit_status)}; log {d.log}"
        for d in report.dead_workers
    ]


def fuzz_run_markdown(report: FuzzRunReport, replay_commands: Sequence[str]) -> str:
    """fuzz.md: what ran, for how long, on what; each shard's line (merged), each worker's and round's
    row, the dead workers, the interrupted tests, each failure; ``replay_commands``: the ``ppaux fuzz
    replay`` that re-runs the saved failures against what was fuzzed, one per implementation,
    database and time limit."""
    s = report
    lines = [
        "# Fuzz run" + (f" ({len(s.shards)} shards merged)" if s.shards else ""),
        "",
        f"- started: {s.started_at}; ran {format_duration(s.elapsed_s)} of a {format_duration(s.budget_s)} budget"
        + ("" if s.complete else f" (stopped early by {s.stopped_by}: partial report)"),
        f"- implementation: `{s.impl}`; suite: {s.suite}; tests: `{s.tests or 'all Hypothesis tests'}`"
        + (f"; shard {s.shard}" if s.shard else ""),
        f"- workers: {len(s.workers)}; placements: {', '.join(s.placements)}",
        f"- example database: `{s.db}`",
        f"- examples: {s.examples:,} ({s.examples_per_s:,}/s) in {len(s.rounds)} rounds",
        f"- per-call time limit: {s.timeout_s:g} s",
        f"- failures: **{len(s.failures)}**"
        + (f"; dead workers: **{len(s.dead_workers)}**" if s.dead_workers else "")
        + (f"; interrupted (still running when stopped, no verdict): {len(s.interrupted)}" if s.interrupted else ""),
        "",
    ]
    if s.shards:
        lines += ["| shard | examples | failures | workers | ended by |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {h.shard} | {h.examples:,} | {h.failures} | {h.workers} | {h.stopped_by} |" for h in s.shards]
        lines.append("")
    lines += [
        "| worker | placements | rounds | examples | failures found first | died |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {w.shard + ' ' if w.shard else ''}{w.worker} | {', '.join(w.placements)} | "
        f"{w.rounds} | {w.examples:,} | {w.failures} | {'yes' if w.died else 'no'} |"
        for w in s.workers
    ]
    lines += [""] + _rounds_md(s) + _dead_md(s)
    if s.interrupted:
        lines += [
            "",
            "## Interrupted",
            "",
            "Still running when their round was stopped: no verdict for these runs.",
            "",
        ]
        lines += [
            f"- `{i.nodeid}` (worker {i.worker}, round {i.round}, {i.placement}; stopped by {i.stopped_by})"
            for i in s.interrupted
        ]
    lines += ["", "## Failures", ""]
    if not s.failures:
        lines += ["None.", ""]
    for f in s.failures:
        lines += _fuzz_failure_md(f)
    if len(replay_commands) == 1:
        lines += [f"Replay every saved failure: `{replay_commands[0]}`", ""]
    else:  # shards of other implementations, databases or time limits: one replay each, each against its own
        lines += ["Replay every saved failure, one command per implementation, database and time limit:", ""]
        lines += [f"- `{c}`" for c in replay_commands] + [""]
    return "\n".join(lines)


def fuzz_replay_markdown(report: FuzzReplayReport) -> str:
    """replay.md: what was replayed against what, the tests that no longer fail, each one that still does."""
    s = report
    lines = [
        "# Replay of saved fuzz failures",
        "",
        f"- at: {s.at}; implementation: `{s.impl}`; database: `{s.db}`; placement: {s.placement}",
        f"- tests with saved failures: {s.tests_with_saved_failures} ({s.saved_examples} saved examples)",
        f"- still failing: **{len(s.still_failing)}**; no longer failing: {len(s.no_longer_failing)}",
        "",
    ]
    if s.no_longer_failing:
        lines += ["## No longer failing", ""] + [f"- `{t.nodeid}` ({t.saved} saved)" for t in s.no_longer_failing]
        lines.append("")
    lines += ["## Still failing", ""]
    if not s.still_failing:
        lines += ["None.", ""]
    for f in s.still_failing:
        lines += _fuzz_failure_md(f)
    return "\n".join(lines)


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
