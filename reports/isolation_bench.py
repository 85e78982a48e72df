"""What containment costs the main job: ``python -m reports.isolation_bench [--runs N]``.

``ppaux check`` on the reference, from a fresh interpreter, with the suite in ppaux's fork server
(the default: a supervised forked worker) and in process (``--isolation off``), in pairs run back to
back in alternating order, so that a machine that slows down for a while slows both. The figures are
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
import time
from pathlib import Path

OUT = Path("reports") / "out"
GOAL_SECONDS = 5.0
GOAL_RATIO = 1.2
SIDES = {"fork server": [], "in process": ["--isolation", "off"]}


def check_seconds(extra: list[str]) -> float:
    """The wall time of one ``ppaux check`` on the reference, in a fresh interpreter."""
    with tempfile.TemporaryDirectory() as report:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ppaux", "check", "--report", report, *extra],
            check=True,
            stdout=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        return time.perf_counter() - start


def measure(runs: int) -> dict[str, object]:
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for run in range(runs):
        # Alternate which side goes first: a warm page cache or a busy minute favours neither.
        order = list(SIDES) if run % 2 == 0 else list(reversed(SIDES))
        for side in order:
            times[side].append(check_seconds(SIDES[side]))
    ratios = [forked / inproc for forked, inproc in zip(times["fork server"], times["in process"])]
    return {
        "command": "ppaux check --report DIR [--isolation off]",
        "runs": runs,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "seconds": times,
        "median_seconds": {side: statistics.median(values) for side, values in times.items()},
        "median_ratio": statistics.median(ratios),
        "goal": {"seconds": GOAL_SECONDS, "ratio": GOAL_RATIO},
    }


def markdown(result: dict[str, object]) -> str:
    medians = result["median_seconds"]
    assert isinstance(medians, dict)
    seconds = result["seconds"]
    assert isinstance(seconds, dict)
    lines = [
        f"`{result['command']}`, {result['runs']} alternating runs each ({result['machine']}):",
        "",
        "| suite | median s | runs (s) |",
        "| --- | --- | --- |",
    ]
    for side, median in medians.items():
        lines.append(f"| {side} | {median:.2f} | {', '.join(f'{s:.2f}' for s in seconds[side])} |")
    lines += [
        "",
        f"Median ratio of each pair, fork server / in process: {result['median_ratio']:.2f} "
        f"(goal: at most {GOAL_RATIO:g}, and at most {GOAL_SECONDS:g} s).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.isolation_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pairs of runs (default 5)")
    args = parser.parse_args(argv)
    result = measure(args.runs)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "isolation_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (OUT / "isolation_bench.md").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
