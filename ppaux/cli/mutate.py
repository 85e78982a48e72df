"""``ppaux mutate``: how many bugs in an implementation would the conformance suite catch, and
how many would that project's own tests catch?

The implementation's module is copied into a scratch project and mutated with mutmut 3; the
shipped conformance suite, pointed at the mutated copy, kills what it can. With ``--baseline``
the same mutants run against another command (the project's own tests), and the report puts the
two side by side. Tests that fail on the unmutated module cannot kill anything: robustness tests
(where an implementation may differ from the contract, as SGLang does) are left out and listed;
any other red test, or a red baseline, is bad input (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any, Dict, List, Optional

import ppaux.conformance as conformance
from ppaux.cli.usage import UsageError, timeout_seconds
from ppaux.isolation import DEFAULT_TIMEOUT
from ppaux.testing.impl import ImplementationError
from ppaux.testing.mutation import (
    MutmutProject,
    Progress,
    Target,
    changed_line,
    is_killed,
    resolve,
    run_with_mutant,
    verdicts,
    write_config,
    write_scratch,
)
from ppaux.testing.profiles import PROFILES

DEFAULT_REPORT = os.path.join("reports", "out", "mutate")
SUITE = sorted(Path(conformance.__file__).resolve().parent.glob("test_*.py"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--impl", required=True, metavar="MODULE_OR_FILE", help="the implementation to mutate (its module is copied, never changed)")
    parser.add_argument("--baseline", metavar="COMMAND", help="also run each mutant against this command (e.g. the project's own tests); exit 0 means the mutant survived")
    parser.add_argument("--gate", type=float, default=100.0, metavar="PCT", help="the score ppaux's suite must reach (default 100)")
    parser.add_argument("--report", default=DEFAULT_REPORT, metavar="DIR", help=f"where to write mutate.md, mutate.json and the scratch project (default {DEFAULT_REPORT})")
    parser.add_argument("--marks", default="contract or robustness", metavar="EXPR", help="which tests may kill (pytest -m expression; default: 'contract or robustness')")
    parser.add_argument("--tests", metavar="EXPR", help="narrow the killing tests by name (pytest -k expression)")
    parser.add_argument("--profile", default="mutation", help=f"Hypothesis profile: {', '.join(PROFILES)} (default: mutation)")
    parser.add_argument("--equivalents", metavar="FILE", help="JSON {mutant: reason} of mutants judged equivalent: listed with their reason, left out of the score")
    parser.add_argument("--max-children", type=int, default=None, metavar="N", help="parallel mutant runs (default: the CPU count)")
    parser.add_argument("--timeout", metavar="SECONDS", type=timeout_seconds, default=DEFAULT_TIMEOUT,
                        help=f"per-call time limit: a mutant whose call does not return within it is killed as a hang (default: {DEFAULT_TIMEOUT:g})")


def _suite_args(args: argparse.Namespace, target: Target) -> List[str]:
    cmd = ["-p", "no:cacheprovider", "-p", "no:randomly", "--hypothesis-profile", args.profile,
           f"--ppaux-impl={target.module}", f"--ppaux-timeout={args.timeout!r}", "-m", args.marks]
    return cmd + (["-k", args.tests] if args.tests else [])


def _clean_run(args: argparse.Namespace, target: Target, scratch: Path) -> Dict[str, Any]:
    """The kill set: the suite on the unmutated copy. Failing robustness tests are left out; any other failure is bad input."""
    # pragma: no mutate start - equivalent: any file name in the fresh scratch directory serves
    results = scratch / "clean-run.jsonl"
    # pragma: no mutate end
    cmd = [sys.executable, "-m", "pytest", "tests", "-q", *_suite_args(args, target), f"--ppaux-results={results}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(scratch), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    if proc.returncode not in (0, 1) or not rows:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise UsageError(f"the conformance suite did not run on the unmutated module (pytest exit {proc.returncode})")
    failed = [r for r in rows if r["outcome"] == "failed"]
    red = [r["nodeid"] for r in failed if "robustness" not in r["marks"]]
    if red:
        raise UsageError(f"the unmutated module fails {len(red)} contract test(s), so they cannot kill mutants: {', '.join(red)}")
    passed = [r["nodeid"] for r in rows if r["outcome"] == "passed"]
    if not passed:
        raise UsageError("no conformance test passes on the unmutated module: nothing can kill a mutant")
    return {"passed": passed, "left_out": [r["nodeid"] for r in failed]}


# pragma: no mutate start - equivalent: the bound shows only on a baseline that hangs for ten minutes
CLEAN_BASELINE_TIMEOUT_S = 600.0
# pragma: no mutate end
# pragma: no mutate start - equivalent: any source that fails to import serves
UNIMPORTABLE = b"raise ImportError('ppaux mutate: the copy under test was imported')\n"
# pragma: no mutate end


def _baseline_on_the_copy(command: List[str], scratch: Path) -> float:
    """The baseline must pass on the unmutated copy: how long it takes."""
    status, seconds = run_with_mutant(command, pythonpath=[scratch], timeout=CLEAN_BASELINE_TIMEOUT_S)
    if status != "survived":
        why = "timed out" if status == "timeout" else "fails"
        raise UsageError(f"the baseline command {why} on the unmutated module: {shlex.join(command)}")
    return seconds


def _baseline_imports_the_copy(command: List[str], target: Target, scratch: Path) -> None:
    """Where the module under test is a copy that raises on import, the baseline must fail:
    otherwise it imports the module from elsewhere and cannot kill a mutant."""
    # pragma: no mutate start - equivalent: any fresh directory in the scratch project serves
    sentinel = scratch / "sentinel"
    # pragma: no mutate end
    write_scratch(target, sentinel, tests=[], source=UNIMPORTABLE)
    status, _ = run_with_mutant(command, pythonpath=[sentinel], timeout=CLEAN_BASELINE_TIMEOUT_S)
    if status == "survived":
        raise UsageError("the baseline command passes even when the module under mutation cannot be imported: "
                         f"it does not import the copy ({shlex.join(command)})")


def _run_baseline(command: List[str], scratch: Path, mutants: List[str], clean_s: float, workers: int) -> Dict[str, str]:
    progress = Progress(label="baseline mutants")
    timeout = max(10.0, 10 * clean_s)
    done: Dict[str, str] = {}

    def one(name: str) -> None:
        done[name], _ = run_with_mutant(command, pythonpath=[scratch / "mutants"], mutant=name, timeout=timeout)
        killed = sum(s != "survived" for s in done.values())
        progress.update(len(done), len(mutants), killed, len(done) - killed)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, mutants))
    killed = sum(s != "survived" for s in done.values())
    progress.update(len(done), len(mutants), killed, len(done) - killed, force=True)
    return {name: done[name] for name in mutants}


def _equivalents(path: Optional[str]) -> Dict[str, str]:
    if path is None:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--equivalents {path!r}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) and v.strip() for v in data.values()):
        raise UsageError(f"--equivalents {path!r} must be a JSON object {{mutant: reason}} with a reason for each")
    return data


def build_report(args: argparse.Namespace, target: Target, suite: Dict[str, str], baseline: Optional[Dict[str, str]],
                 diffs: Dict[str, str], clean: Dict[str, Any], equivalents: Dict[str, str], wall_s: float) -> Dict[str, Any]:
    judged = {name: reason for name, reason in equivalents.items() if name in suite and not is_killed(suite[name])}
    counted = [name for name in suite if name not in judged]
    killed = sum(is_killed(suite[name]) for name in counted)
    score = round(100.0 * killed / len(counted), 2) if counted else 100.0
    mutants = []
    for name, status in suite.items():
        entry: Dict[str, Any] = {"mutant": name, "suite": status}
        if baseline is not None:
            entry["baseline"] = baseline[name]
        if name in judged:
            entry["equivalent"] = judged[name]
        if not is_killed(status) or (baseline is not None and baseline[name] == "survived"):
            entry["diff"] = diffs.get(name, "")
            entry["line"] = changed_line(entry["diff"])
        mutants.append(entry)
    report: Dict[str, Any] = {
        "kind": "mutate", "implementation": args.impl, "module": target.module, "mutmut": version("mutmut"),
        "profile": args.profile, "marks": args.marks, "tests": args.tests, "kill_set": len(clean["passed"]),
        "left_out": clean["left_out"], "wall_s": wall_s, "total": len(suite), "equivalent": len(judged),
        "killed": killed, "score": score, "gate": args.gate, "passes": score >= args.gate,
        "verdicts": verdicts(suite), "stale_equivalents": sorted(set(equivalents) - set(judged)), "mutants": mutants,
    }
    if baseline is not None:
        both = [m for m in mutants if is_killed(m["suite"]) and m["baseline"] != "survived"]
        only_ppaux = [m for m in mutants if is_killed(m["suite"]) and m["baseline"] == "survived"]
        only_baseline = [m for m in mutants if not is_killed(m["suite"]) and m["baseline"] != "survived"]
        neither = [m for m in mutants if not is_killed(m["suite"]) and m["baseline"] == "survived"]
        # Over the same mutants as ppaux's score: no test can kill one judged equivalent.
        baseline_killed = sum(m["mutant"] not in judged for m in both + only_baseline)
        report["baseline"] = {"command": args.baseline, "killed": baseline_killed,
                              "score": round(100.0 * baseline_killed / len(counted), 2) if counted else 100.0,
                              "side_by_side": {"both": len(both), "only ppaux": len(only_ppaux),
                                               "only the baseline": len(only_baseline), "neither": len(neither)}}
    return report


def render_markdown(report: Dict[str, Any]) -> str:
    lines = [f"# Mutation testing: `{report['implementation']}`", "",
             f"- ppaux's conformance suite: **{report['score']}%** ({report['killed']}/{report['total'] - report['equivalent']} "
             f"mutants killed{'; ' + str(report['equivalent']) + ' judged equivalent' if report['equivalent'] else ''}); "
             f"gate {report['gate']}%: {'**pass**' if report['passes'] else '**FAIL**'}",
             f"- module `{report['module']}`, mutmut {report['mutmut']}, profile `{report['profile']}`, tests `{report['marks']}`"
             + (f" and `-k {report['tests']}`" if report["tests"] else "") + f": {report['kill_set']} tests; wall time {report['wall_s']} s",
             "- verdicts: " + ", ".join(f"{status} {n}" for status, n in report["verdicts"].items())]
    if report["left_out"]:
        lines.append("- left out of the kill set (robustness tests that fail on the unmutated module): "
                     + ", ".join(f"`{n}`" for n in report["left_out"]))
    if "baseline" in report:
        b = report["baseline"]
        lines += ["", f"## Side by side with `{b['command']}`", "",
                  "| killed by | mutants |", "| --- | --- |"]
        lines += [f"| {kind} | {n} |" for kind, n in b["side_by_side"].items()]
        lines += ["", f"ppaux's suite {report['score']}%, the baseline {b['score']}% of {report['total'] - report['equivalent']} mutants"
                  + (f" ({report['equivalent']} judged equivalent left out)." if report["equivalent"] else ".")]
    survivors = [m for m in report["mutants"] if "diff" in m]
    lines += ["", "## Survivors", ""]
    if not survivors:
        lines.append("None.")
    for m in survivors:
        who = "survives ppaux's suite" if not is_killed(m["suite"]) else "killed by ppaux's suite"
        if "baseline" in m:
            who += ", " + ("survives the baseline" if m["baseline"] == "survived" else "killed by the baseline")
        lines += [f"### `{m['mutant']}` ({who})", ""]
        if m.get("equivalent"):
            lines += [f"Judged equivalent: {m['equivalent']}", ""]
        lines += [f"Changes `{m['line']}`", "", "```diff", m["diff"].strip(), "```", ""]
    if report["stale_equivalents"]:
        lines += ["## Stale equivalence entries (killed, or no such mutant)", ""]
        lines += [f"- `{name}`" for name in report["stale_equivalents"]]
    return "\n".join(lines).rstrip() + "\n"


def run(args: argparse.Namespace) -> int:
    for module, name in (("mutmut", "mutmut 3"), ("tomli_w", "tomli-w")):
        try:
            importlib.import_module(module)  # only whether it is installed
        except ImportError:
            raise UsageError(f"{name} is not installed, and mutate needs it: pip install 'ppaux[mutate]'") from None
    if args.profile not in PROFILES:
        raise UsageError(f"unknown profile {args.profile!r}; choose from {', '.join(PROFILES)}")
    if not 0 <= args.gate <= 100:
        raise UsageError(f"--gate must be between 0 and 100, got {args.gate}")
    equivalents = _equivalents(args.equivalents)
    command = shlex.split(args.baseline) if args.baseline else None
    if args.baseline is not None and not command:
        raise UsageError("--baseline needs a command")
    if command is not None and shutil.which(command[0]) is None:
        raise UsageError(f"baseline command not found: {command[0]!r}")
    try:
        target = resolve(args.impl)
    except ImplementationError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.report).resolve()
    scratch = out / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    start = time.monotonic()
    write_scratch(target, scratch, tests=SUITE)
    write_config(target, scratch, pytest_args=_suite_args(args, target))
    clean = _clean_run(args, target, scratch)
    clean_s = 0.0
    if command is not None:
        _baseline_imports_the_copy(command, target, scratch)
        clean_s = _baseline_on_the_copy(command, scratch)
    progress = Progress()
    if clean["left_out"]:
        progress.say(f"ppaux mutate: {len(clean['left_out'])} robustness test(s) fail on the unmutated module and are left out of the kill set")
    # Only the kill set: the left-out tests would "kill" every mutant.
    pytest_args = _suite_args(args, target) + [arg for nodeid in clean["left_out"] for arg in ("--deselect", nodeid)]
    write_config(target, scratch, pytest_args=pytest_args)
    project = MutmutProject(scratch)
    code = project.run(max_children=args.max_children, log=out / "mutmut-run.log", progress=progress)
    suite = project.results()
    if code != 0 or not suite:
        raise UsageError(f"mutmut did not run (exit {code}); see {out / 'mutmut-run.log'}")
    baseline = None
    if command is not None:
        baseline = _run_baseline(command, scratch, list(suite), clean_s, args.max_children or os.cpu_count() or 1)
    wanted = [n for n, s in suite.items() if not is_killed(s) or (baseline is not None and baseline[n] == "survived")]
    diffs = project.diffs(wanted, lambda name: target.relative_path.as_posix())
    report = build_report(args, target, suite, baseline, diffs, clean, equivalents, round(time.monotonic() - start, 1))
    (out / "mutate.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "mutate.md").write_text(render_markdown(report), encoding="utf-8")
    line = f"ppaux mutate: {report['score']}% ({report['killed']}/{report['total'] - report['equivalent']} killed) in {report['wall_s']} s"
    if "baseline" in report:
        line += f"; baseline {report['baseline']['score']}%; " + ", ".join(f"{k} {v}" for k, v in report["baseline"]["side_by_side"].items())
    progress.say(line + f"; gate {report['gate']}% {'pass' if report['passes'] else 'FAIL'}; report {out / 'mutate.md'}")
    for name in report["stale_equivalents"]:
        progress.say(f"ppaux mutate: stale equivalence entry (killed, or no such mutant): {name}")
    return 0 if report["passes"] else 1
