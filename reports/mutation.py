"""Mutation testing as routine: mutmut 3 over ppaux/ from a clean ``mutants/``, the score per
module, every surviving mutant's diff, and the gate.

mutmut's own exit status says nothing (0 with survivors) and its cache outlives test edits,
so this always starts clean and reads the verdicts from ``mutmut results --all true``.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
# Per-module gate (percent of mutants killed). The transport and the error catalog are the
# contract itself: every mutant there must die.
GATES = {"ppaux.core.transport": 100.0, "ppaux.core.errors": 100.0}
DEFAULT_GATE = 95.0
# A mutant whose tests crash the test process (mutmut says "segfault": killed by a signal, e.g.
# gloo aborting on a corrupt rendezvous) was detected as surely as one that fails a test.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
# mutmut files any exit code it has no name for as "suspicious", SIGABRT included (gloo aborting
# in a rank thread of the test process). Its meta files keep the code: a death by a signal is
# reported as "crashed (SIGNAME)" and counted with the crashes above.
SUSPICIOUS = "suspicious"
CRASHED = "crashed"
CLEAN_RUN_FAILED = "Failed to run clean test"
_LINE = re.compile(r"^\s*(?P<name>[\w.ǁ]+__mutmut_\d+): (?P<status>.+?)\s*$")


_PRAGMA = re.compile(r"#\s*pragma:\s*no mutate(?: (?P<kind>block|start|end))?(?:\s+-\s+(?P<reason>\S.*?))?\s*$")


# What the gate refuses in a marking, in the words the report and the console use.
NO_REASON = "'# pragma: no mutate' without a reason (write ' - equivalent: why')"
# mutmut 3.8 opens a start/end region only from a comment on a line of its own; after code, the
# comment marks that one line and the lines in between stay mutated.
REGION_AFTER_CODE = "a start/end region after code marks only its own line (put the comment on a line of its own)"


def equivalents(source: Path = ROOT / "ppaux") -> List[Dict[str, object]]:
    """Every ``# pragma: no mutate`` under ``source``: where it is, whether it covers more than its
    line, the one-line reason after its `` - `` (``None`` when it gives none), and the
    ``problem`` that makes the gate refuse it (``None`` for a sound marking)."""
    found = []
    for path in sorted(source.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = _PRAGMA.search(line)
            if not m:
                continue
            after_code = m["kind"] in ("start", "end") and line[:m.start()].strip() != ""
            if m["kind"] == "end" and not after_code:  # a region's reason is on its start line
                continue
            problem = REGION_AFTER_CODE if after_code else (None if m["reason"] else NO_REASON)
            found.append({"where": f"{path.relative_to(source.parent).as_posix()}:{number}",
                          "block": m["kind"] in ("block", "start") and not after_code,
                          "reason": m["reason"], "problem": problem})
    return found


def gate_for(module: str) -> float:
    return GATES.get(module, DEFAULT_GATE)


def module_of(mutant: str) -> str:
    # ppaux.errors.xǁCatalogEntryǁmessage__mutmut_3 -> ppaux.errors ; ppaux.cli.x_main__mutmut_1 -> ppaux.cli
    head = mutant.split("__mutmut_")[0]
    parts = head.split(".")
    return ".".join(p for p in parts[:-1])


def parse_results(text: str) -> Dict[str, str]:
    return {m["name"]: m["status"] for m in map(_LINE.match, text.splitlines()) if m}


def select(results: Dict[str, str], only: List[str]) -> Dict[str, str]:
    """The verdicts of the mutants ``only`` names (fnmatch patterns, as ``mutmut run`` takes them); all when empty."""
    if not only:
        return dict(results)
    return {name: status for name, status in results.items() if any(fnmatch.fnmatch(name, p) for p in only)}


def crashes(mutants: Path) -> Dict[str, str]:
    """``{mutant: "crashed (SIGNAME)"}`` for each mutant whose test process died by a signal,
    read from the exit codes in mutmut's ``*.meta`` files under ``mutants``."""
    found = {}
    for meta in sorted(mutants.rglob("*.meta")):
        try:
            codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
        except (OSError, ValueError):
            continue
        for name, code in codes.items():
            if isinstance(code, int) and code < 0:
                try:
                    found[name] = f"{CRASHED} ({signal.Signals(-code).name})"
                except ValueError:
                    found[name] = f"{CRASHED} (signal {-code})"
    return found


def name_crashes(results: Dict[str, str], crashed: Dict[str, str]) -> Dict[str, str]:
    """``results`` with each "suspicious" verdict that was a death by a signal named as such."""
    return {name: crashed.get(name, status) if status == SUSPICIOUS else status for name, status in results.items()}


def is_killed(status: str) -> bool:
    return status in KILLED or status.startswith(f"{CRASHED} (")


def verdicts(results: Dict[str, str]) -> Dict[str, int]:
    """How many mutants got each verdict, most common first: how the killed ones were killed."""
    return dict(sorted(Counter(results.values()).items(), key=lambda kv: (-kv[1], kv[0])))


def score(results: Dict[str, str]) -> Dict[str, Dict[str, object]]:
    modules: Dict[str, Dict[str, object]] = defaultdict(lambda: {"total": 0, "killed": 0, "survivors": []})
    for name, status in sorted(results.items()):
        entry = modules[module_of(name)]
        entry["total"] += 1
        if is_killed(status):
            entry["killed"] += 1
        else:
            entry["survivors"].append({"mutant": name, "status": status})
    out = {}
    for module, entry in sorted(modules.items()):
        pct = 100.0 * entry["killed"] / entry["total"] if entry["total"] else 100.0
        out[module] = {**entry, "score": round(pct, 2), "gate": gate_for(module), "passes": pct >= gate_for(module)}
    return out


def _mutmut(*args: str, log: Optional[Path] = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mutmut", *args]
    if log is None:
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    with open(log, "w") as fh:
        return subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, text=True)


def _source_path(mutant: str) -> str:
    return module_of(mutant).replace(".", "/") + ".py"


_DIFF_SCRIPT = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
out = {}
for name, path in json.load(sys.stdin):
    try:
        out[name] = get_diff_for_mutant(name, path=path)
    except Exception as exc:
        out[name] = f"(no diff: {type(exc).__name__}: {exc})"
print(json.dumps(out))
"""


def _diffs(pairs: List[Tuple[str, str]]) -> Dict[str, str]:
    """Every survivor's diff in one process: ``mutmut show`` per mutant costs ~0.5 s each."""
    if not pairs:
        return {}
    proc = subprocess.run([sys.executable, "-c", _DIFF_SCRIPT], cwd=ROOT, input=json.dumps(pairs),
                          capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def _marking_line(marking: Dict[str, object]) -> str:
    said = [str(marking["reason"])] if marking["reason"] else []
    said += [f"**{marking['problem']}**"] if marking.get("problem") else []
    return f"- `{marking['where']}`{' (block)' if marking['block'] else ''}: {' '.join(said)}"


def write(report: Dict[str, object], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# Mutation testing", "",
             f"- score: **{report['score']}%** ({report['killed']}/{report['total']} mutants killed); "
             f"gate: {'**pass**' if report['passes'] else '**FAIL**'}",
             f"- wall time: {report['wall_s']} s; mutmut {report['mutmut']}; command: `python -m reports mutation"
             + "".join(f" --only '{p}'" for p in report.get("only", [])) + "`"]
    if report.get("verdicts"):
        lines.append("- verdicts: " + ", ".join(f"{status} {n}" for status, n in report["verdicts"].items()))
    lines += ["",
             "| module | mutants | killed | score | gate | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for module, m in report["modules"].items():
        lines.append(f"| {module} | {m['total']} | {m['killed']} | {m['score']}% | {m['gate']}% | {'pass' if m['passes'] else 'FAIL'} |")
    lines += ["", "## Marked equivalent (`# pragma: no mutate`)", ""]
    lines += [_marking_line(e) for e in report.get("equivalents", [])]
    lines += ["", "## Surviving mutants", ""]
    if not report["survivors"]:
        lines += ["None.", ""]
    for s in report["survivors"]:
        lines += [f"### `{s['mutant']}` ({s['status']})", "", "```diff", s["diff"].strip(), "```", ""]
    (out / "mutation.md").write_text("\n".join(lines))


def run(out_dir: str, max_children: Optional[int], only: Optional[List[str]] = None) -> int:
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    start = time.monotonic()
    only = list(only or [])
    args = ["run"] + ([f"--max-children={max_children}"] if max_children else []) + only
    proc = _mutmut(*args, log=out / "mutmut-run.log")
    if proc.returncode != 0 and CLEAN_RUN_FAILED in (out / "mutmut-run.log").read_text(errors="replace"):
        # mutmut forks its clean run from the process that has just run the whole suite for its
        # stats (gloo groups and threads included), and that fork now and then fails with no
        # output. Run again: mutmut loads the stats it saved and forks from a fresh process.
        # A test that really fails the clean run fails it again here.
        print("reports: mutmut's clean run failed; running mutmut again on the stats it saved", file=sys.stderr)
        proc = _mutmut(*args, log=out / "mutmut-run-again.log")
    wall = round(time.monotonic() - start, 1)
    listing = _mutmut("results", "--all", "true")
    results = name_crashes(select(parse_results(listing.stdout), only), crashes(ROOT / "mutants"))
    if proc.returncode != 0 or not results:
        print(f"reports: error: mutmut run failed (exit {proc.returncode}); see {out / 'mutmut-run.log'}", file=sys.stderr)
        return 1
    modules = score(results)
    survivors = [s for module in modules.values() for s in module["survivors"]]
    diffs = _diffs([(s["mutant"], _source_path(s["mutant"])) for s in survivors])
    survivors = [{**s, "diff": diffs.get(s["mutant"], "")} for s in survivors]
    killed = sum(m["killed"] for m in modules.values())
    total = sum(m["total"] for m in modules.values())
    from importlib.metadata import version as _version

    version = _version("mutmut")
    marked = equivalents()
    report = {"kind": "mutation", "wall_s": wall, "mutmut": version, "total": total, "killed": killed,
              "score": round(100.0 * killed / total, 2) if total else 100.0,
              "passes": all(m["passes"] for m in modules.values()) and not any(e["problem"] for e in marked),
              "verdicts": verdicts(results), "only": only, "modules": modules, "survivors": survivors,
              "equivalents": marked}
    write(report, out)
    print(f"mutation: {report['score']}% ({killed}/{total} killed) in {wall} s; gate {'pass' if report['passes'] else 'FAIL'}; "
          f"report {out / 'mutation.md'}")
    for module, m in modules.items():
        if not m["passes"]:
            print(f"  {module}: {m['score']}% < {m['gate']}% ({len(m['survivors'])} survivors)")
    for e in marked:
        if e["problem"]:
            print(f"  {e['where']}: {e['problem']}")
    return 0 if report["passes"] else 1
