"""``ppaux check``: run the property suite against an implementation and write a
conformance report (Markdown + JSON) with each clause's verdict, minimal example and blob."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List

from ppaux import impl as impl_mod
from ppaux.cli import UsageError
from ppaux.profiles import PROFILES

SUITE = Path(__file__).resolve().parent.parent / "tests"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--impl", metavar="MODULE_OR_FILE", help="implementation to check (default: ppaux's own)")
    parser.add_argument("--profile", default="ci", help=f"Hypothesis profile: {', '.join(PROFILES)} (default: ci)")
    parser.add_argument("--report", default="reports/out/conformance", metavar="DIR", help="where to write conformance.md and conformance.json")
    parser.add_argument("--marks", default="contract or robustness", metavar="EXPR", help="which tests (pytest -m expression; default: 'contract or robustness')")
    parser.add_argument("--tests", metavar="EXPR", help="narrow further by test name (pytest -k expression)")


def build_report(rows: List[Dict[str, Any]], *, impl: str, profile: str, marks: str) -> Dict[str, Any]:
    """Group per-test rows by contract clause; a clause holds when none of its tests failed."""
    clauses: "OrderedDict[str, Dict[str, Any]]" = OrderedDict()
    for row in rows:
        key = row.get("clause") or "unclassified"
        entry = clauses.setdefault(key, {"clause": key, "marks": [], "verdict": "pass", "tests": []})
        entry["tests"].append(row)
        entry["marks"] = sorted(set(entry["marks"]) | set(row.get("marks", [])))
        if row["outcome"] == "failed":
            entry["verdict"] = "fail"
    failed = [c for c in clauses.values() if c["verdict"] == "fail"]
    return {
        "implementation": impl,
        "profile": profile,
        "marks": marks,
        "verdict": "fail" if failed or not rows else "pass",
        "counts": {o: sum(r["outcome"] == o for r in rows) for o in ("passed", "failed", "skipped")},
        "clauses": list(clauses.values()),
    }


def render_markdown(report: Dict[str, Any]) -> str:
    lines = [
        f"# Conformance report: `{report['implementation']}`",
        "",
        f"Verdict: **{report['verdict'].upper()}** (profile `{report['profile']}`, tests `{report['marks']}`; "
        f"{report['counts']['passed']} passed, {report['counts']['failed']} failed, {report['counts']['skipped']} skipped)",
        "",
        "| clause | marks | verdict | tests |",
        "| --- | --- | --- | --- |",
    ]
    for c in report["clauses"]:
        lines.append(f"| {c['clause']} | {', '.join(c['marks'])} | {c['verdict']} | {len(c['tests'])} |")
    failures = [(c, t) for c in report["clauses"] for t in c["tests"] if t["outcome"] == "failed"]
    if failures:
        lines += ["", "## Counterexamples"]
    for clause, test in failures:
        lines += ["", f"### {clause['clause']}: `{test['nodeid']}`", "", test.get("doc") or "", ""]
        lines += [f"Error: `{test.get('error') or 'see the test output'}`", ""]
        if test.get("example"):
            lines += ["```", test["example"], "```", ""]
        if test.get("blob"):
            lines += [f"Replay: add `{test['blob']}` above the test.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _pytest_command(args: argparse.Namespace, spec: str, results: str) -> List[str]:
    # -o addopts= drops the coverage gate, which belongs to the reference run alone.
    cmd = [sys.executable, "-m", "pytest", str(SUITE), "-q", "-o", "addopts=", "-p", "no:cacheprovider", "-m", args.marks,
           "--hypothesis-profile", args.profile, "--ppaux-results", results]
    if spec:
        cmd += ["--ppaux-impl", spec]
    if args.tests:
        cmd += ["-k", args.tests]
    return cmd


def run(args: argparse.Namespace) -> int:
    if args.profile not in PROFILES:
        raise UsageError(f"unknown profile {args.profile!r}; choose from {', '.join(PROFILES)}")
    if not SUITE.is_dir():
        raise UsageError(f"the property suite is not at {SUITE}; install ppaux from its checkout (pip install -e .)")
    spec = args.impl or ""
    if spec and Path(spec).is_file():
        spec = str(Path(spec).resolve())
    try:
        impl_mod.load(spec)
    except impl_mod.ImplementationError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.report)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        results = os.path.join(tmp, "results.jsonl")
        proc = subprocess.run(_pytest_command(args, spec, results), cwd=SUITE.parent, text=True, capture_output=True)
        rows = [json.loads(line) for line in Path(results).read_text().splitlines()] if os.path.exists(results) else []
    if proc.returncode not in (0, 1):
        # Collection or usage failure inside pytest: show its own words, exit as a usage error.
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise UsageError(f"the suite did not run (pytest exit {proc.returncode})")
    report = build_report(rows, impl=args.impl or impl_mod.DEFAULT_IMPL, profile=args.profile, marks=args.marks)
    (out / "conformance.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = render_markdown(report)
    (out / "conformance.md").write_text(markdown)
    print(markdown)
    print(f"report written to {out / 'conformance.md'} and {out / 'conformance.json'}")
    return 0 if report["verdict"] == "pass" else 1
