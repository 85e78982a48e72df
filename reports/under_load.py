"""The README's test command, on a busy machine or an idle one, from a named state of the bytecode cache.

``python -m reports.under_load [--runs N] [--hogs K] [--bytecode cold|first|warm]`` runs ``pytest
--hypothesis-profile=ci -n 2`` (the README's second command) N times (default 5) in this checkout while
K processes (default 2, one per core of CI's machine) spin without pause, and says each run's exit
status, its summary line and its wall time. The goal (issue 34): every run green; no verdict of the
suite may depend on how busy the machine is. ``--bytecode`` names the state of the checkout's bytecode
cache each run starts from (:mod:`reports.bytecode`): ``cold`` (default), nothing cached nor written, as
on a machine that never writes bytecode; ``first``, a fresh clone's first test run after the README's
first command; ``warm``, Python's default, written by an untimed run first. Each run's CPU time (user
and system, of the run and every process it waited for) is given beside its wall time: how busy the run
kept the cores, and between commits how much work each did (on a shared machine both move with the
hour). Writes reports/out/under_load.{json,md}; nothing here is asserted, and the times are only what
the machine took.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from pathlib import Path

from reports import bytecode
from reports.machine import REFERENCE_LOOP, speed_reference

CHECKOUT = Path(__file__).resolve().parent.parent
# Appended to the README's command: one summary line per run, read into the report.
QUIET = ("-q",)
OUT = CHECKOUT / "reports" / "out"


def spin() -> None:  # pragma: no cover - the load, in a process of its own
    while True:
        pass


def one_run(number: int, state: str) -> dict[str, object]:
    # The busy processes are reaped only after the last run: the children's CPU counted here is the run's.
    run = bytecode.timed_readme_tests(state, CHECKOUT, *QUIET)
    return {
        "run": number,
        "exit": run.done.returncode,
        "summary": run.said_last,
        "wall_s": round(run.wall, 1),
        "user_s": round(run.cpu.user, 1),
        "system_s": round(run.cpu.system, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.under_load", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes beside the runs (default 2)")
    parser.add_argument(
        "--bytecode",
        choices=bytecode.STATES,
        default="cold",
        help="the checkout's bytecode cache as each run starts: cold (default), nothing cached nor written; first, "
        "as the README's first command leaves a fresh clone; warm, written by a run first",
    )
    args = parser.parse_args(argv)
    if args.bytecode == "warm":
        bytecode.warm_up(CHECKOUT, bytecode.readme_tests())
    speed = [speed_reference()]
    print(f"speed reference: {speed[0]:.2f} s ({REFERENCE_LOOP})", flush=True)
    hogs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    runs = []
    try:
        for number in range(1, args.runs + 1):
            runs.append(one_run(number, args.bytecode))
            run = runs[-1]
            print(
                f"run {number}: exit {run['exit']} in {run['wall_s']} s (CPU {run['user_s']} s user, "
                f"{run['system_s']} s system): {run['summary']}",
                flush=True,
            )
    finally:
        for hog in hogs:
            hog.kill()
    speed.append(speed_reference())
    green = sum(r["exit"] == 0 for r in runs)
    OUT.mkdir(parents=True, exist_ok=True)
    result = {
        "command": " ".join([*bytecode.README_TESTS, *QUIET]),
        "hogs": args.hogs,
        "bytecode": args.bytecode,
        "cores": os.cpu_count(),
        "speed reference s, before and after": [round(s, 2) for s in speed],
        "runs": runs,
    }
    (OUT / "under_load.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = [
        f"| {r['run']} | {r['exit']} | {r['wall_s']} | {r['user_s']} | {r['system_s']} | {r['summary']} |" for r in runs
    ]
    md = [
        f"# The README's tests under load: {green}/{len(runs)} green",
        "",
        f"`{result['command']}` beside {args.hogs} busy processes, {os.cpu_count()} cores, "
        f"bytecode cache {args.bytecode}; the machine's speed reference (`{REFERENCE_LOOP}`) "
        f"{speed[0]:.2f} s before, {speed[1]:.2f} s after.",
        "",
        "| run | exit | wall s | user CPU s | system CPU s | summary |",
        "| --- | --- | --- | --- | --- | --- |",
        *table,
        "",
    ]
    (OUT / "under_load.md").write_text("\n".join(md), encoding="utf-8")
    print(f"under load: {green}/{len(runs)} green; speed reference after: {speed[1]:.2f} s; reports/out/under_load.md")
    return 0 if green == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
