"""ppaux's own mutation runs: mutmut 3 over part of ppaux/ (a scope) in a scratch copy of the
checkout, the score per module, every surviving mutant's diff, every equivalence marking, the gate.

Two scopes, one source of truth (:data:`SCOPES`): ``contract`` (the modules that carry the
contract, every mutant killed; ``.ci/run``) and ``package`` (all of ppaux/, score reported; the
nightly job). mutmut's own exit status says nothing (0 with survivors) and its cache outlives test
edits, so every run starts from a fresh copy and reads the verdicts from ``mutmut results``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import time
import tokenize
from collections import defaultdict
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ppaux.testing.mutation import MUTANT_PYTEST_ARGS, MutmutProject, Progress, is_killed, module_of, mutmut_table, select, verdicts

ROOT = Path(__file__).resolve().parents[1]
CLEAN_RUN_FAILED = "Failed to run clean test"
# What the scratch copy holds: the package, its tests and what they read.
COPIED = ("ppaux", "strategies", "tests", "docs", "fuzz", "reports", "README.md", "CHANGELOG.md", "LICENSE",
          "ppaux_pytest.py", "pyproject.toml")
# -o addopts= and no xdist: mutmut runs the tests in its own process. The fuzz/, reports/, binding
# and SGLang-release tests run ppaux in subprocesses, where no mutant of this process lives.
PYTEST_ARGS = ("-o", "addopts=", "--strict-markers", "-p", "no:cacheprovider", "--hypothesis-profile=mutation", "-q",
               "-p", "no:randomly", "-m", "not sglang", "--ignore=tests/test_fuzz.py", "--ignore=tests/test_reports.py",
               "--ignore=tests/test_binding.py", "--ignore=tests/test_sglang_conformance.py")
CONTRACT_MODULES = ("ppaux/core/transport.py", "ppaux/core/errors.py", "ppaux/core/integrity.py", "ppaux/relay/wire.py")


@dataclass(frozen=True)
class Scope:
    """What one kind of run mutates, which tests may kill, and the gate (``None``: reported only)."""

    mutate: Tuple[str, ...]
    tests: Tuple[str, ...]
    gate: Optional[float]
    doc: str
    # Opt-in test marks the scope's tests need (tests/conftest.py), as environment variables.
    environ: Tuple[Tuple[str, str], ...] = ()


SCOPES: Dict[str, Scope] = {
    "contract": Scope(
        mutate=CONTRACT_MODULES,
        # The shipped suite and the tests of these modules: every mutant of the contract must die here.
        tests=("ppaux/conformance/", "tests/test_catalog.py", "tests/test_integrity.py", "tests/test_transport_names.py",
               "tests/test_wire.py", "tests/test_wire_relay_api.py", "tests/test_pipeline.py", "tests/test_faults.py"),
        gate=100.0,
        doc="the modules that carry the contract (transport, errors, integrity, the wire model), every mutant killed",
    ),
    "package": Scope(
        mutate=("ppaux/*",),
        tests=("ppaux/conformance/", "ppaux/examples/", "tests/"),
        gate=None,
        doc="all of ppaux/, the score per module reported (the contract modules still gated at 100%)",
        # ppaux mutate's command-line tests run its clean runs in child processes; in-process they kill its mutants.
        environ=(("PPAUX_SUBPROCESS", "1"),),
    ),
}


_PRAGMA = re.compile(r"#\s*pragma:\s*no mutate(?: (?P<kind>block|start|end))?(?:\s+-\s+(?P<reason>\S.*?))?\s*$")


# What the gate refuses in a marking, in the words the report and the console use.
NO_REASON = "'# pragma: no mutate' without a reason (write ' - equivalent: why')"
# mutmut 3.8 opens a start/end region only from a comment on a line of its own; after code, the
# comment marks that one line and the lines in between stay mutated.
REGION_AFTER_CODE = "a start/end region after code marks only its own line (put the comment on a line of its own)"
# mutmut 3.8 reads a region's comments only between statements: inside brackets they mark nothing.
REGION_INSIDE_BRACKETS = "a start/end region inside brackets marks nothing (open it before the statement, between statements)"


def _bracket_depths(text: str) -> Dict[int, int]:
    """For each line with a comment, how many brackets are open where the comment stands."""
    depth, depths = 0, {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.COMMENT:
            depths[tok.start[0]] = depth
    return depths


def equivalents(source: Path = ROOT / "ppaux") -> List[Dict[str, object]]:
    """Every ``# pragma: no mutate`` under ``source``: where it is, whether it covers more than its
    line, the one-line reason after its `` - `` (``None`` when it gives none), and the
    ``problem`` that makes the gate refuse it (``None`` for a sound marking)."""
    found = []
    for path in sorted(source.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "no mutate" not in text:  # nothing to read, and no need to tokenize it
            continue
        depths = _bracket_depths(text)
        for number, line in enumerate(text.splitlines(), 1):
            m = _PRAGMA.search(line)
            if not m:
                continue
            after_code = m["kind"] in ("start", "end") and line[:m.start()].strip() != ""
            if m["kind"] == "end" and not after_code:  # a region's reason is on its start line
                continue
            inside = m["kind"] in ("start", "block") and depths.get(number, 0) > 0
            problem = (REGION_AFTER_CODE if after_code else REGION_INSIDE_BRACKETS if inside
                       else None if m["reason"] else NO_REASON)
            found.append({"where": f"{path.relative_to(source.parent).as_posix()}:{number}",
                          "block": m["kind"] in ("block", "start") and not after_code,
                          "reason": m["reason"], "problem": problem})
    return found


def gate_for(module: str, scope: Scope) -> Optional[float]:
    """The contract modules are gated at 100% in every scope; the others at the scope's gate."""
    if module.replace(".", "/") + ".py" in CONTRACT_MODULES:
        return 100.0
    return scope.gate


def score(results: Dict[str, str], scope: Scope) -> Dict[str, Dict[str, object]]:
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
        gate = gate_for(module, scope)
        out[module] = {**entry, "score": round(pct, 2), "gate": gate, "passes": gate is None or pct >= gate}
    return out


def project(scope: Scope, dest: Path) -> MutmutProject:
    """A scratch copy of the checkout whose ``[tool.mutmut]`` table is the scope's."""
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "out", "index.html", "mutants"))
        else:
            shutil.copy2(src, dest / name)
    config = {
        "source_paths": ["ppaux/"],
        "only_mutate": list(scope.mutate),
        # The plugin that orders and freezes mutmut's own test runs: a mutant of it changes how
        # long a run takes, never a verdict.
        "do_not_mutate": ["ppaux/conformance/*", "ppaux/testing/mutant_runs.py"],
        "also_copy": [n + ("/" if (ROOT / n).is_dir() else "") for n in COPIED if n not in ("ppaux", "pyproject.toml")],
        "pytest_add_cli_args": [*MUTANT_PYTEST_ARGS, *PYTEST_ARGS],
        "pytest_add_cli_args_test_selection": list(scope.tests),
        # Fork every mutant from a server that has already imported torch and collected the suite:
        # forking from mutmut's own process re-imports torch and every test module per mutant (~2 s each).
        "process_isolation": "forkserver",
        "forkserver_warmup": "collect",
        # mutmut stops a mutant's run at 15 times the time its tests took in the clean run (a
        # quarter of an hour for the command-line tests): a mutant that loops for ever cost that
        # much. Three times is margin enough on a machine running one mutant per core.
        "timeout_multiplier": 3.0,
    }
    pyproject = (dest / "pyproject.toml").read_text(encoding="utf-8")
    (dest / "pyproject.toml").write_text(pyproject.rstrip() + "\n\n" + mutmut_table(config), encoding="utf-8")
    return MutmutProject(dest)


def _marking_line(marking: Dict[str, object]) -> str:
    said = [str(marking["reason"])] if marking["reason"] else []
    said += [f"**{marking['problem']}**"] if marking.get("problem") else []
    return f"- `{marking['where']}`{' (block)' if marking['block'] else ''}: {' '.join(said)}"


def write(report: Dict[str, object], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation.json").write_text(json.dumps(report, indent=2) + "\n")
    scope = report.get("scope", "contract")
    lines = ["# Mutation testing", "",
             f"- scope `{scope}`: {report.get('scope_doc', SCOPES[scope].doc)}",
             f"- score: **{report['score']}%** ({report['killed']}/{report['total']} mutants killed); "
             f"gate: {'**pass**' if report['passes'] else '**FAIL**'}",
             f"- wall time: {report['wall_s']} s; mutmut {report['mutmut']}; command: `python -m reports mutation --scope {scope}"
             + "".join(f" --only '{p}'" for p in report.get("only", [])) + "`"]
    if report.get("verdicts"):
        lines.append("- verdicts: " + ", ".join(f"{status} {n}" for status, n in report["verdicts"].items()))
    lines += ["",
             "| module | mutants | killed | score | gate | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for module, m in report["modules"].items():
        gate = "reported" if m["gate"] is None else f"{m['gate']}%"
        lines.append(f"| {module} | {m['total']} | {m['killed']} | {m['score']}% | {gate} | {'pass' if m['passes'] else 'FAIL'} |")
    lines += ["", "## Marked equivalent (`# pragma: no mutate`)", ""]
    lines += [_marking_line(e) for e in report.get("equivalents", [])]
    lines += ["", "## Surviving mutants", ""]
    if not report["survivors"]:
        lines += ["None.", ""]
    for s in report["survivors"]:
        lines += [f"### `{s['mutant']}` ({s['status']})", "", "```diff", s["diff"].strip(), "```", ""]
    (out / "mutation.md").write_text("\n".join(lines))


def run(out_dir: str, max_children: Optional[int], only: Optional[List[str]] = None, scope_name: str = "contract") -> int:
    scope = SCOPES[scope_name]
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / "project"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    mutmut = project(scope, scratch)
    start = time.monotonic()
    only = list(only or [])
    env = dict(os.environ, **dict(scope.environ))
    code = mutmut.run(max_children=max_children, only=only, log=out / "mutmut-run.log", progress=Progress(), env=env)
    if code != 0 and CLEAN_RUN_FAILED in (out / "mutmut-run.log").read_text(errors="replace"):
        # mutmut forks its clean run from the process that has just run the whole suite for its
        # stats (gloo groups and threads included), and that fork now and then fails with no
        # output. Run again: mutmut loads the stats it saved and forks from a fresh process.
        # A test that really fails the clean run fails it again here.
        print("reports: mutmut's clean run failed; running mutmut again on the stats it saved", file=sys.stderr)
        code = mutmut.run(max_children=max_children, only=only, log=out / "mutmut-run-again.log", progress=Progress(), env=env)
    wall = round(time.monotonic() - start, 1)
    results = select(mutmut.results(), only)
    if code != 0 or not results:
        print(f"reports: error: mutmut run failed (exit {code}); see {out / 'mutmut-run.log'}", file=sys.stderr)
        return 1
    modules = score(results, scope)
    survivors = [s for module in modules.values() for s in module["survivors"]]
    diffs = mutmut.diffs([s["mutant"] for s in survivors], lambda name: module_of(name).replace(".", "/") + ".py")
    survivors = [{**s, "diff": diffs.get(s["mutant"], "")} for s in survivors]
    killed = sum(m["killed"] for m in modules.values())
    total = sum(m["total"] for m in modules.values())
    marked = equivalents()
    report = {"kind": "mutation", "scope": scope_name, "scope_doc": scope.doc, "wall_s": wall, "mutmut": version("mutmut"),
              "total": total, "killed": killed, "score": round(100.0 * killed / total, 2) if total else 100.0,
              "passes": all(m["passes"] for m in modules.values()) and not any(e["problem"] for e in marked),
              "verdicts": verdicts(results), "only": only, "modules": modules, "survivors": survivors,
              "equivalents": marked}
    write(report, out)
    print(f"mutation ({scope_name}): {report['score']}% ({killed}/{total} killed) in {wall} s; "
          f"gate {'pass' if report['passes'] else 'FAIL'}; report {out / 'mutation.md'}")
    for module, m in modules.items():
        if not m["passes"]:
            print(f"  {module}: {m['score']}% < {m['gate']}% ({len(m['survivors'])} survivors)")
    for e in marked:
        if e["problem"]:
            print(f"  {e['where']}: {e['problem']}")
    return 0 if report["passes"] else 1
