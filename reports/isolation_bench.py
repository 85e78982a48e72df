"""What containment costs the main job: ``python -m reports.isolation_bench [--runs N]``.

``ppaux check`` on the reference, from a fresh interpreter, with the suite in ppaux's fork server
(the default: a supervised forked worker per core, at most 4), in one worker (``--workers 1``) and in
process (``--isolation off``), in rounds run back to back in alternating order, so that a machine
that slows down for a while slows every side. The figures are
the medians of each side's wall times and of each pair's ratio. The goal (issue 34): the fork server
at most 5 s and at most 1.2x the in-process run. Writes reports/out/isolation_bench.{json,md};
nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from reports.bytecode import ppaux_check
from reports.machine import timed_run

OUT = Path("reports") / "out"
GOAL_SECONDS = 5.0
GOAL_RATIO = 1.2
SIDES = {"fork server": [], "fork server, one worker": ["--workers", "1"], "in process": ["--isolation", "off"]}


def check_seconds(extra: list[str], python: str = sys.executable) -> tuple[float, float]:
    """The wall time of one ``ppaux check`` on the reference, in a fresh interpreter, and the CPU
    time of it and every process it started (the workers, the reruns): the CPU figure moves less
    with what else the machine runs."""
    with tempfile.TemporaryDirectory() as report:
        # From an empty directory: `python -m ppaux` imports the interpreter's ppaux, not a checkout's.
        _, wall, cpu = timed_run(
            ppaux_check(report, *extra, python=python),
            check=True,
            stdout=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            cwd=report,
        )
        return wall, cpu.total


def measure(runs: int, baseline: str | None = None) -> dict[str, object]:
    sides = {side: (sys.executable, extra) for side, extra in SIDES.items()}
    if baseline is not None:
        sides[f"baseline ({baseline})"] = (baseline, [])
    times: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    for run in range(runs):
        # Alternate which side goes first: a warm page cache or a busy minute favours neither.
        order = list(sides) if run % 2 == 0 else list(reversed(sides))
        for side in order:
            python, extra = sides[side]
            wall, used = check_seconds(extra, python)
            times[side].append(wall)
            cpu[side].append(used)
    ratios = [forked / inproc for forked, inproc in zip(times["fork server"], times["in process"])]
    cpu_ratios = [forked / inproc for forked, inproc in zip(cpu["fork server"], cpu["in process"])]
    return {
        "command": "ppaux check --report DIR [--workers 1 | --isolation off]",
        "runs": runs,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load": os.getloadavg()[0],
        "seconds": times,
        "cpu_seconds": cpu,
        "median_seconds": {side: statistics.median(values) for side, values in times.items()},
        "median_cpu_seconds": {side: statistics.median(values) for side, values in cpu.items()},
        "median_ratio": statistics.median(ratios),
        "median_cpu_ratio": statistics.median(cpu_ratios),
        "goal": {"seconds": GOAL_SECONDS, "ratio": GOAL_RATIO},
    }


def markdown(result: dict[str, object]) -> str:
    medians = result["median_seconds"]
    assert isinstance(medians, dict)
    seconds = result["seconds"]
    assert isinstance(seconds, dict)
    cpu = result["median_cpu_seconds"]
    assert isinstance(cpu, dict)
    lines = [
        f"`{result['command']}`, {result['runs']} alternating runs each ({result['machine']}; "
        f"load average {result['load']:.1f} at the end):",
        "",
        "| suite | median wall s | median CPU s | wall s of each run |",
        "| --- | --- | --- | --- |",
    ]
    for side, median in medians.items():
        runs = ", ".join(f"{s:.2f}" for s in seconds[side])
        lines.append(f"| {side} | {median:.2f} | {cpu[side]:.2f} | {runs} |")
    lines += [
        "",
        f"Median ratio of each pair, fork server / in process: {result['median_ratio']:.2f} wall, "
        f"{result['median_cpu_ratio']:.2f} CPU (goal: at most {GOAL_RATIO:g}, and at most {GOAL_SECONDS:g} s).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.isolation_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pairs of runs (default 5)")
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="also time `PYTHON -m ppaux check` in each round (another install of ppaux: an earlier release)",
    )
    args = parser.parse_args(argv)
    result = measure(args.runs, args.baseline)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "isolation_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (OUT / "isolation_bench.md").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
