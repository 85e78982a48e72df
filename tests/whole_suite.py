"""Run the shipped conformance suite together with ppaux's nested-pytester tests in one pytest
process, as a user's run would, and read back what each test did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Nested in-process sessions (pytester) that bind other implementations: if the binding leaked,
# the conformance tests that run after them would check the wrong code.
NESTED = ROOT / "tests" / "test_plugin.py"


def run_in_one_process(
    impl: str, cwd: Path, *, reverse: bool = False, pythonpath: str = ""
) -> tuple[int, dict[str, dict], str]:
    """(exit status, {nodeid: result row}, output) of one process that runs the nested-session tests and the suite."""
    results = cwd / "results.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(NESTED),
        "ppaux.conformance",
        "--pyargs",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        "-q",
        "--hypothesis-profile=ci",
        f"--ppaux-impl={impl}",
        f"--ppaux-results={results}",
    ]
    if reverse:
        cmd += ["-p", "tests.reverse_order"]
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), pythonpath, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, cwd=cwd, env=environ, capture_output=True, text=True, timeout=600)
    rows = {r["nodeid"]: r for r in map(json.loads, results.read_text().splitlines())} if results.exists() else {}
    return proc.returncode, rows, proc.stdout[-3000:] + proc.stderr[-3000:]


def failed(rows: dict[str, dict]) -> list[str]:
    return sorted(n for n, r in rows.items() if r["outcome"] == "failed")


def robustness_tests(rows: dict[str, dict]) -> list[str]:
    return sorted(n for n, r in rows.items() if "robustness" in r["marks"])
