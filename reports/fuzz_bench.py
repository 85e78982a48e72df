"""How ``ppaux fuzz run`` scales with workers: ``python -m reports.fuzz_bench`` runs the same
budget with ``--workers 1``, then 2 (then more, with ``--workers 1 2 4``), one after the other in
this one invocation, and writes the examples each ran to reports/out/fuzz-bench.{json,md}.

The goal (issue 22): at least 1.7x the examples of one worker with two, on 2 cores. Not part of
.ci/run (a minute per worker count); nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ppaux.testing.suite import usable_cores

OUT = Path("reports") / "out"
# Conformance properties whose examples cost about the same: the workers start at different
# tests, so a mix of cheap and costly ones would measure the mix, not the workers.
TESTS = "test_properties"


def fuzz_examples(workers: int, budget: str, tests: str, tmp: Path) -> dict[str, Any]:
    report = tmp / f"workers-{workers}"
    cmd = [
        sys.executable,
        "-m",
        "ppaux",
        "fuzz",
        "run",
        "--workers",
        str(workers),
        "--budget",
        budget,
        "--devices",
        "cpu",
        "--tests",
        tests,
        "--db",
        str(tmp / f"db-{workers}"),
        "--report",
        str(report),
        "--progress-every",
        "3600",
    ]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - started
    summary = json.loads((report / "fuzz.json").read_text())
    return {
        "workers": workers,
        "exit_status": done.returncode,
        "wall_s": round(wall, 1),
        "examples": summary["examples"],
        "examples_per_s": summary["examples_per_s"],
        "rounds": len(summary["rounds"]),
        "per_worker": [w["examples"] for w in summary["workers"]],
        "failures": len(summary["failures"]),
    }


def render(rows: list[dict[str, Any]], budget: str, tests: str, load: str | None) -> str:
    base = rows[0]["examples"] or 1
    lines = [
        f"# ppaux fuzz run: examples in a {budget} budget by --workers",
        "",
        f"`--tests {tests} --devices cpu`, {usable_cores()} cores; load average before: {load}",
        "",
        "| workers | examples | examples/s | vs 1 worker | per worker | rounds | wall (s) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['workers']} | {r['examples']:,} | {r['examples_per_s']} | {r['examples'] / base:.2f}x | "
        f"{', '.join(f'{e:,}' for e in r['per_worker'])} | {r['rounds']} | {r['wall_s']} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.fuzz_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", default="60s", help="each run's budget (default 60s)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts, in order (default 1 2)")
    parser.add_argument("--tests", default=TESTS, help=f"pytest -k expression (default {TESTS!r})")
    args = parser.parse_args(argv)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        rows = [fuzz_examples(n, args.budget, args.tests, Path(tmp)) for n in args.workers]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "fuzz-bench.json").write_text(
        json.dumps({"budget": args.budget, "tests": args.tests, "rows": rows}, indent=2)
    )
    text = render(rows, args.budget, args.tests, load)
    (OUT / "fuzz-bench.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
