"""This checkout against another commit's, timed in turns at the same hour, as a ratio.

A shared machine's speed moves by more than most changes save: the same commit's README tests took 29 s
one evening and 65 s the next (docs/benchmarks.md), so a figure against a goal in seconds says as much
about the hour as about the code; the ratio of two commits timed in turns is what the speed cancels out
of. ``python -m reports.versus --against DIR --python PY [--pairs N]`` times the README's two commands,
the tests (``pytest --hypothesis-profile=ci -n 2``, in the checkout) and the main job (``ppaux check`` on
the reference, from an empty directory), of the checkout DIR run with PY (an environment DIR is installed
into, as the README's first command installs this one; issue 34's figures were taken at cce1f99) and of
this checkout with the Python that runs this, N times each (default 3), in turns whose order swaps from
pair to pair (against first, then this first), so that a machine that speeds up or slows down meanwhile
weighs on both sides. Every run starts cold (nothing of either
checkout cached, nothing written: :mod:`reports.bytecode`). Writes reports/out/versus.{json,md}: each
run's exit, wall and CPU time, and for each command the median of the pairs' ratios, this over that.
Nothing here is asserted; exits 1 when a run did not pass (its times are not of the same work).

Preparing the other side, for example::

    git worktree add /tmp/base cce1f99 && python -m venv /tmp/base-env
    /tmp/base-env/bin/pip install torch==2.13.0 -e "/tmp/base[test]"   # PIP_CONSTRAINT=.ci/constraints.txt
    python -m reports.versus --against /tmp/base --python /tmp/base-env/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports import bytecode
from reports.machine import REFERENCE_LOOP, TimedRun, speed_reference, timed_run

CHECKOUT = Path(__file__).resolve().parent.parent
OUT = CHECKOUT / "reports" / "out"
COMMANDS = ("tests", "check")
# What the report's table gives of each run, in its order.
RUN_KEYS = ("pair", "command", "side", "exit", "wall_s", "cpu_s", "summary")
# The cache state of every run: the one both sides can be put in alike, whatever their earlier runs left.
STATE = "cold"


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a checkout, and the Python of the environment it is installed into."""

    name: str
    checkout: Path
    python: str


def time_command(command: str, side: Side) -> TimedRun:
    """One timed run of ``command`` (one of :data:`COMMANDS`) of ``side``, its output captured as text."""
    if command == "tests":
        return bytecode.timed_readme_tests(STATE, side.checkout, "-q", python=side.python)
    with bytecode.prepared(STATE, side.checkout) as env, tempfile.TemporaryDirectory() as empty:
        check = bytecode.ppaux_check(str(Path(empty, "report")), python=side.python)
        return timed_run(check, cwd=empty, env=env, capture_output=True, text=True)


def commit(checkout: Path) -> str:
    """The checkout's commit, short, as the report names each side by."""
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else "not a git checkout"


def compare(against: Side, this: Side, pairs: int) -> list[dict[str, Any]]:
    """Each command of both sides, ``pairs`` times in turn, the first side of a pair swapping each time."""
    runs: list[dict[str, Any]] = []
    for pair in range(1, pairs + 1):
        order = (against, this) if pair % 2 else (this, against)
        for command in COMMANDS:
            for side in order:
                run = time_command(command, side)
                runs.append(
                    {
                        "pair": pair,
                        "command": command,
                        "side": side.name,
                        "exit": run.done.returncode,
                        "wall_s": round(run.wall, 2),
                        "cpu_s": round(run.cpu.total, 1),
                        "summary": run.said_last,
                    }
                )
                print(
                    f"pair {pair}, {command}, {side.name}: exit {run.done.returncode} in {run.wall:.1f} s "
                    f"(CPU {run.cpu.total:.0f} s): {runs[-1]['summary']}",
                    flush=True,
                )
    return runs


def ratios(runs: list[dict[str, Any]], measure: str) -> dict[str, float]:
    """For each command, the median over the pairs of this side's ``measure`` over the other's."""
    seen: dict[tuple[str, int], dict[str, float]] = {}
    for run in runs:
        seen.setdefault((run["command"], run["pair"]), {})[run["side"]] = run[measure]
    return {
        command: round(
            statistics.median(
                sides["this"] / sides["against"] for (which, _), sides in seen.items() if which == command
            ),
            2,
        )
        for command in dict.fromkeys(run["command"] for run in runs)
    }


def render(result: dict[str, Any]) -> str:
    """The report as Markdown: what was compared, the ratios, then every run."""
    wall, cpu = result["wall ratio, this over against"], result["CPU ratio, this over against"]
    lines = [
        "# This checkout against another, in turns",
        "",
        f"This checkout (`{result['this']}`, {result['this commit']}) against `{result['against']}` "
        f"({result['against commit']}, run with `{result['against python']}`), "
        f"{result['pairs']} pairs, every run {STATE}; the machine's speed reference (`{REFERENCE_LOOP}`) "
        f"{result['speed reference s, before and after'][0]:.2f} s before, "
        f"{result['speed reference s, before and after'][1]:.2f} s after.",
        "",
        "| command | median wall ratio, this / against | median CPU ratio |",
        "| --- | --- | --- |",
        *(f"| {command} | {wall[command]} | {cpu[command]} |" for command in wall),
        "",
        "| pair | command | side | exit | wall s | CPU s | summary |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *("| " + " | ".join(str(run[key]) for key in RUN_KEYS) + " |" for run in result["runs"]),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.versus", description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, metavar="DIR", help="the other commit's checkout")
    parser.add_argument(
        "--python", required=True, metavar="PY", help="the Python of an environment DIR is installed into"
    )
    parser.add_argument("--pairs", type=int, default=3, help="runs of each command on each side (default 3)")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs: expected at least one pair, got {args.pairs}")
    against = Side("against", args.against.resolve(), args.python)
    this = Side("this", CHECKOUT, sys.executable)
    speed = [speed_reference()]
    runs = compare(against, this, args.pairs)
    speed.append(speed_reference())
    result = {
        "this": str(this.checkout),
        "this commit": commit(this.checkout),
        "against": str(against.checkout),
        "against commit": commit(against.checkout),
        "against python": against.python,
        "pairs": args.pairs,
        "bytecode": STATE,
        "speed reference s, before and after": [round(s, 2) for s in speed],
        "wall ratio, this over against": ratios(runs, "wall_s"),
        "CPU ratio, this over against": ratios(runs, "cpu_s"),
        "runs": runs,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "versus.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (OUT / "versus.md").write_text(render(result), encoding="utf-8")
    failed = sum(run["exit"] != 0 for run in runs)
    print(
        f"this over against, median wall ratio: {result['wall ratio, this over against']}; "
        f"{failed} of {len(runs)} runs did not pass; reports/out/versus.md"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
