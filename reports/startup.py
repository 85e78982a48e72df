"""What an installed, unused ppaux costs another project's test run: ``python -m reports.startup``.

A stand-in project without ppaux tests (one test file of its own) is collected, ``pytest --co -q``
from a fresh interpreter, with ppaux's plugin loaded and with ``-p no:ppaux``, in pairs run back to
back (in alternating order), so that a machine that slows down for a while slows both: the figure is
the median of each pair's difference, in wall time and in the CPU time of the pytest process. Each
run also says whether it imported ppaux or torch. The goal (issue 33): at most 50 ms apart, and
neither imported. With ``--instructions``, one collection each way also runs under valgrind's
callgrind, whose instruction counts do not move with the machine's load (a few minutes). Writes
reports/out/startup.{json,md}; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from reports.machine import timed_run

OUT = os.path.join("reports", "out")
GOAL_MS = 50.0

# The project's own files: a test, and a conftest that says, as the run ends, what it imported.
TEST = "def test_nothing_to_do_with_ppaux():\n    assert True\n"
CONFTEST = """
import json, os, sys


def pytest_unconfigure(config):
    with open(os.environ["STARTUP_IMPORTS"], "w") as fh:
        json.dump(sorted(m for m in ("ppaux", "torch") if m in sys.modules), fh)
"""


def _one_run(project: Path, with_ppaux: bool) -> tuple[float, float, list[str]]:
    """Wall and CPU seconds of one collection, and what it imported of ppaux and torch."""
    imports = project / "imports.json"
    cmd = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
    cmd += [] if with_ppaux else ["-p", "no:ppaux"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PPAUX_", "PYTEST_"))}
    _, wall, cpu = timed_run(
        cmd, cwd=project, env={**env, "STARTUP_IMPORTS": str(imports)}, check=True, capture_output=True
    )
    return wall, cpu.total, json.loads(imports.read_text())


def bench_startup(runs: int, instructions: bool = False) -> dict[str, Any]:
    """``runs`` pairs of collections (after one pair that warms the bytecode caches)."""
    counted: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "conftest.py").write_text(CONFTEST)
        (project / "test_theirs.py").write_text(TEST)
        pairs: list[dict[bool, tuple[float, float]]] = []
        imported: dict[bool, set[str]] = {True: set(), False: set()}
        for i in range(runs + 1):
            pair = {}
            for with_ppaux in (True, False) if i % 2 else (False, True):
                wall, cpu, names = _one_run(project, with_ppaux)
                imported[with_ppaux].update(names)
                pair[with_ppaux] = (wall, cpu)
            if i:
                pairs.append(pair)
        if instructions:
            counted = bench_instructions(project)

    def median_ms(figure: int, with_ppaux: bool | None) -> float:
        values = [p[True][figure] - p[False][figure] if with_ppaux is None else p[with_ppaux][figure] for p in pairs]
        return round(statistics.median(values) * 1000, 1)

    rate = {}
    if counted:
        # Instructions per CPU millisecond of the run without ppaux: what the difference costs here.
        per_ms = counted["-p no:ppaux, instructions"] / median_ms(1, False)
        rate = {
            "difference, ms at this machine's rate": round(
                (counted["with ppaux, instructions"] - counted["-p no:ppaux, instructions"]) / per_ms, 1
            )
        }
    return {
        "pairs": runs,
        "with ppaux, wall ms": median_ms(0, True),
        "-p no:ppaux, wall ms": median_ms(0, False),
        "difference, wall ms": median_ms(0, None),
        "difference, CPU ms": median_ms(1, None),
        "goal ms": GOAL_MS,
        "imported with ppaux": ", ".join(sorted(imported[True])) or "nothing",
        "imported without": ", ".join(sorted(imported[False])) or "nothing",
        **counted,
        **rate,
    }


def _instructions(project: Path, with_ppaux: bool) -> int:
    """Instructions the collection executed, every process it started included, as callgrind counts them."""
    with tempfile.TemporaryDirectory() as out:
        log = Path(out, "log")
        cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--log-file={log}"]
        cmd += [f"--callgrind-out-file={out}/cg.%p", sys.executable, "-m", "pytest", "--co", "-q", "-p"]
        cmd += ["no:cacheprovider"] + ([] if with_ppaux else ["-p", "no:ppaux"])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PPAUX_", "PYTEST_"))}
        # A fixed hash seed: set and dict orders, and so the instructions, are the same every run.
        env.update(STARTUP_IMPORTS=os.devnull, PYTHONHASHSEED="0")
        subprocess.run(cmd, cwd=project, env=env, check=True, capture_output=True)
        return sum(int(n) for n in re.findall(r"Collected : (\d+)", log.read_text()))


def bench_instructions(project: Path) -> dict[str, Any]:
    counts = {w: _instructions(project, w) for w in (True, False)}
    return {
        "with ppaux, instructions": counts[True],
        "-p no:ppaux, instructions": counts[False],
        "difference, millions": round((counts[True] - counts[False]) / 1e6, 1),
    }


def markdown(result: dict[str, Any]) -> str:
    keys = list(result)
    lines = ["| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
    lines.append("| " + " | ".join(str(result[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.startup", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="pairs of collections; the medians are kept (default 15)")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions under valgrind (needs valgrind; minutes)"
    )
    parser.add_argument("--out", default=OUT, help=f"output directory (default {OUT})")
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on the PATH")
    result = bench_startup(args.runs, args.instructions)
    os.makedirs(args.out, exist_ok=True)
    Path(args.out, "startup.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    Path(args.out, "startup.md").write_text("# pytest start-up with ppaux installed\n\n" + table, encoding="utf-8")
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
