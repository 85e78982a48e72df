"""``ppaux check``: run the shipped conformance suite (:mod:`ppaux.conformance`) against an
implementation and write a conformance report (Markdown, JSON, optionally JUnit XML) with each
clause's statement, verdict, minimal example and reproduce blob."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

from ppaux.cli.usage import UsageError, example_count, timeout_seconds
from ppaux.core.clauses import CLAUSES, statement
from ppaux.isolation import DEFAULT_TIMEOUT
from ppaux.regressions import module_search_path, write_regressions
from ppaux.testing.advice import rerun_command
from ppaux.testing.impl import DEFAULT_IMPL, ImplementationError, load
from ppaux.testing.profiles import TUNINGS
from ppaux.testing.results import JSONObject, read_jsonl
from ppaux.testing.state import STATE, StateError, check_directory, report_directory
from ppaux.testing.suite import DEFAULT_MARKS, SuiteRun, installed_suite
from ppaux.testing.suite import run_in_process as run_suite

FINDING_MEANS = {
    "hang": "a call into the implementation did not return within its limit",
    "crash": "a call into the implementation ended its process",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--impl", metavar="MODULE_OR_FILE", help="implementation to check (default: ppaux's own)")
    parser.add_argument("--profile", default="ci", help=f"Hypothesis profile: {', '.join(TUNINGS)} (default: ci)")
    parser.add_argument(
        "--max-examples",
        metavar="N",
        type=example_count,
        help="examples per property (default: as the profile says; ci: 40)",
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="where to write conformance.md and conformance.json "
        f"(default: {STATE / 'check'} in the current directory)",
    )
    parser.add_argument(
        "--marks",
        default=DEFAULT_MARKS,
        metavar="EXPR",
        help=f"which tests (pytest -m expression; default: '{DEFAULT_MARKS}')",
    )
    parser.add_argument("--tests", metavar="EXPR", help="narrow further by test name (pytest -k expression)")
    parser.add_argument("--junit", metavar="PATH", help="also write the suite run's JUnit XML there")
    parser.add_argument(
        "--regressions",
        metavar="DIR",
        help="write one standalone regression test (unittest + torch) per broken clause there, each "
        "proven to fail against the implementation and to pass against ppaux's reference; "
        "files of an earlier run there are replaced",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=timeout_seconds,
        default=DEFAULT_TIMEOUT,
        help=f"per-call time limit: a call into the implementation past it fails as a hang "
        f"(default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--isolation",
        choices=("test", "off"),
        default="test",
        help="test (default): the tests run in a supervised forked worker, so that a crash or a hang no signal "
        "reaches is a finding; off: in this process (for a debugger, or to measure what containment costs)",
    )


def build_report(
    rows: list[JSONObject],
    *,
    impl: str,
    profile: str,
    marks: str,
    timeout: float = DEFAULT_TIMEOUT,
    command: str = "",
) -> JSONObject:
    """Group per-test rows by contract clause, in the contract's order; a clause holds when none of its tests failed.

    ``command`` is the ``ppaux check`` command line that runs the check again (the replay advice)."""
    clauses: OrderedDict[str, JSONObject] = OrderedDict()
    for row in rows:
        key = row.get("clause") or "unclassified"
        entry = clauses.setdefault(
            key, {"clause": key, "statement": statement(row.get("clause")), "marks": [], "verdict": "pass", "tests": []}
        )
        entry["tests"].append(row)
        entry["marks"] = sorted(set(entry["marks"]) | set(row.get("marks", [])))
        if row["outcome"] == "failed":
            entry["verdict"] = "fail"
    # In the contract's order; clauses it does not know (a user's own marks, none) after, as first seen.
    order = {clause_id: i for i, clause_id in enumerate(CLAUSES)}
    ordered = sorted(clauses.values(), key=lambda c: order.get(c["clause"], len(order)))
    failed = [c for c in ordered if c["verdict"] == "fail"]
    return {
        "implementation": impl,
        "command": command,
        "profile": profile,
        "marks": marks,
        "timeout_s": timeout,
        "verdict": "fail" if failed or not rows else "pass",
        "counts": {o: sum(r["outcome"] == o for r in rows) for o in ("passed", "failed", "skipped")},
        "failed_clauses": [c["clause"] for c in failed],
        "findings": {kind: sum(r.get("finding") == kind for r in rows) for kind in ("hang", "crash")},
        "clauses": ordered,
    }


def render_markdown(report: JSONObject) -> str:
    lines = [
        f"# Conformance report: `{report['implementation']}`",
        "",
        f"Verdict: **{report['verdict'].upper()}** (profile `{report['profile']}`, tests `{report['marks']}`, "
        f"per-call limit {report['timeout_s']:g} s; "
        f"{report['counts']['passed']} passed, {report['counts']['failed']} failed, "
        f"{report['counts']['skipped']} skipped)",
    ]
    found = ", ".join(
        f"{n} {kind}{'es' if n > 1 and kind == 'crash' else 's' if n > 1 else ''}: {FINDING_MEANS[kind]}"
        for kind, n in report["findings"].items()
        if n
    )
    if found:
        lines += ["", f"Hangs and crashes: {found}."]
    if report["failed_clauses"]:
        lines += ["", f"Clauses broken: {', '.join(report['failed_clauses'])}"]
    lines += ["", "| clause | verdict | statement | marks | tests |", "| --- | --- | --- | --- | --- |"]
    for c in report["clauses"]:
        lines.append(
            f"| {c['clause']} | {c['verdict']} | {c['statement']} | {', '.join(c['marks'])} | {len(c['tests'])} |"
        )
    failures = [(c, t) for c in report["clauses"] for t in c["tests"] if t["outcome"] == "failed"]
    if failures:
        lines += ["", "## Counterexamples"]
    for clause, test in failures:
        kind = f" ({test['finding']})" if test.get("finding") else ""
        lines += ["", f"### {clause['clause']}{kind}: `{test['nodeid']}`", ""]
        if clause["statement"]:
            lines += [f"Clause: {clause['statement']}", ""]
        lines += [test.get("doc") or "", "", f"Error: `{test.get('error') or 'see the test output'}`", ""]
        if test.get("detail"):
            lines += ["```", test["detail"], "```", ""]
        if test.get("example"):
            lines += ["```", test["example"], "```", ""]
        lines += _replay(report, test) + _regression(test)
    lines += _regression_files(report.get("regressions"))
    return "\n".join(lines).rstrip() + "\n"


def _replay(report: JSONObject, test: JSONObject) -> list[str]:
    """Advice that works from an install: the command that replays the failure (the test file is in site-packages)."""
    name = test["nodeid"].rsplit("::", 1)[-1].split("[", 1)[0]
    why = (
        "the `ci` profile draws the same examples on every run"
        if report["profile"] == "ci"
        else "the example database in `.hypothesis/` replays the saved example first"
    )
    lines = [f"Replay: `{report['command']} --tests {shlex.quote(name)}` ({why})."] if report.get("command") else []
    if test.get("blob"):
        lines.append(f"Blob, for a copy of the test of your own: `{test['blob']}` above it.")
    return lines + [""] if lines else []


def _regression(test: JSONObject) -> list[str]:
    found = test.get("regression")
    if not found:
        return []
    if "why" in found:
        return [f"No regression test: {found['why']}.", ""]
    return [f"Regression test `{found['test']}` in `{found['path']}`:", "", "```python", found["code"], "```", ""]


def _regression_files(summary: JSONObject | None) -> list[str]:
    if summary is None:
        return []
    lines = ["", "## Regression tests", "", f"Directory: `{summary['directory']}`."]
    if summary["removed"]:
        lines.append(
            f"Replaced {len(summary['removed'])} file(s) of an earlier run: "
            + ", ".join(f"`{Path(p).name}`" for p in summary["removed"])
            + "."
        )
    lines += [""] + [f"- `{f['path']}` ({f['clause']}): {', '.join(f['tests'])}" for f in summary["files"]]
    if not summary["files"]:
        lines.append("- none written" + ("" if summary["refused"] else ": no clause is broken"))
    for r in summary["refused"]:
        lines.append(f"- not written for `{r['nodeid']}` ({r['clause']}): {r['why']}")
    lines.append("")
    if summary["files"]:
        lines.append(
            "Each file needs only torch and the implementation's module: `python -m unittest` or pytest on it."
        )
    return lines


def command_line(args: argparse.Namespace) -> str:
    """The ``ppaux check`` command that runs this check again (for replay advice)."""
    return rerun_command(
        ["ppaux", "check"],
        [
            ("--impl", args.impl, None),
            ("--profile", args.profile, "ci"),
            ("--max-examples", args.max_examples, None),
            ("--marks", args.marks, DEFAULT_MARKS),
            ("--timeout", args.timeout, DEFAULT_TIMEOUT),
        ],
    )


def pytest_args(args: argparse.Namespace, spec: str, results: str, ini: str) -> list[str]:
    """The suite's run: the installed suite, under an empty config of its own."""
    run = SuiteRun(
        impl=spec or None,
        marks=args.marks,
        tests=args.tests,
        timeout=args.timeout,
        tuning=args.profile,
        max_examples=args.max_examples,
        results=results,
        junit=str(Path(args.junit).resolve()) if args.junit else None,
        isolation=None if args.isolation == "test" else args.isolation,
    )
    # This process imported Hypothesis (and ppaux) before pytest could rewrite their asserts; the
    # suite's own modules it imports afresh and rewrites, so the warning says nothing about the run.
    quiet = ["-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return installed_suite(Path(ini)) + quiet + run.options()


WRONG_EXPRESSION = re.compile(r"ERROR: Wrong expression passed to '-([mk])': (.*)")


def _implementation(impl: str) -> str:
    spec = impl or ""
    if spec and Path(spec).is_file():
        spec = str(Path(spec).resolve())
    try:
        load(spec)
    except ImplementationError as exc:
        raise UsageError(str(exc)) from None
    return spec


def _check_outputs(args: argparse.Namespace, report: Path) -> None:
    """Every path the run will write to, checked before the run: a bad one is a usage error, not a lost run."""
    for option, folder in (
        ("--report", report),
        ("--regressions", args.regressions),
        ("--junit", args.junit and str(Path(args.junit).parent)),
    ):
        why = folder and check_directory(Path(folder))
        if why:
            raise UsageError(f"{option}: {why}")
    if args.junit and Path(args.junit).is_dir():
        raise UsageError(f"--junit: {args.junit} is a directory")


def _suite_rows(args: argparse.Namespace, spec: str) -> list[JSONObject]:
    with tempfile.TemporaryDirectory() as tmp:
        results, ini = os.path.join(tmp, "results.jsonl"), os.path.join(tmp, "pytest.ini")
        Path(ini).write_bytes(b"[pytest]\n")
        argv = pytest_args(args, spec, results, ini) + (["--ppaux-record-calls"] if args.regressions else [])
        status, printed = run_suite(argv)
        rows = read_jsonl(results)
    if status not in (0, 1):
        wrong = WRONG_EXPRESSION.search(printed)
        if wrong:
            option = "--marks" if wrong.group(1) == "m" else "--tests"
            raise UsageError(f"{option} is not a valid pytest -{wrong.group(1)} expression: {wrong.group(2)}")
        # Collection or usage failure inside pytest: show its own words, exit as a usage error.
        sys.stderr.write(printed[-8000:])
        raise UsageError(f"the suite did not run (pytest exit {status})")
    return rows


def _regressions(args: argparse.Namespace, spec: str, report: JSONObject) -> JSONObject:
    folder = Path(args.regressions)
    if report["verdict"] == "pass":
        return write_regressions({"clauses": []}, spec, folder, args.timeout, [])
    return write_regressions(report, spec or DEFAULT_IMPL, folder, args.timeout, module_search_path(spec, Path.cwd()))


def run(args: argparse.Namespace) -> int:
    if args.profile not in TUNINGS:
        raise UsageError(f"unknown profile {args.profile!r}; choose from {', '.join(TUNINGS)}")
    spec = _implementation(args.impl)
    try:
        out = report_directory(args.report, "check")
    except StateError as exc:
        raise UsageError(str(exc)) from None
    _check_outputs(args, out)
    rows = _suite_rows(args, spec)
    report = build_report(
        rows,
        impl=args.impl or DEFAULT_IMPL,
        profile=args.profile,
        marks=args.marks,
        timeout=args.timeout,
        command=command_line(args),
    )
    if args.regressions:
        report["regressions"] = _regressions(args, spec, report)
    (out / "conformance.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = render_markdown(report)
    (out / "conformance.md").write_text(markdown)
    print(markdown)
    written = [out / "conformance.md", out / "conformance.json"] + ([Path(args.junit)] if args.junit else [])
    print("report written to " + ", ".join(str(p) for p in written))
    if args.regressions:
        files = [f["path"] for f in report["regressions"]["files"]]
        print(f"regression tests written to {args.regressions}: {', '.join(files) if files else 'none'}")
    return 0 if report["verdict"] == "pass" else 1
