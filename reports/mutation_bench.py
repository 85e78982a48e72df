"""What an incremental mutation run saves: ``python -m reports.mutation_bench`` copies the checkout,
runs the contract scope's gate there in full (``python -m reports mutation --scope contract --full``,
as a fresh CI runner does), changes one function of a contract module (a ``pass`` appended to its
body: its AST hash changes, its behaviour and its mutants do not), runs the gate again
incrementally (the default), then once more with nothing changed, and writes each run's wall and
CPU seconds (of this process's children), the mutants run and the results reused to
reports/out/mutation-bench.{json,md}.

Not part of .ci/run (minutes); nothing here is asserted. The whole-package full run is the nightly
job's figure, not this script's.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from reports.machine import timed_run
from reports.mutation import CHECKOUT

OUT = Path("reports") / "out"
# A method of a contract module with mutants of its own, changed for the second run.
DEFAULT_FUNCTION = "ppaux/core/integrity.py:verify"


def copy_checkout(dest: Path) -> Path:
    """The checkout's files a mutation run copies, in ``dest``."""
    for name in CHECKOUT.copied:
        src = CHECKOUT.root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "out", "mutants"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def change_one_function(root: Path, spec: str) -> str:
    """Append ``pass`` to the body of the function ``path:name`` under ``root``: its AST changes, nothing else."""
    path, _, name = spec.partition(":")
    source = (root / path).read_text(encoding="utf-8")
    node = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    )
    lines = source.splitlines(keepends=True)
    assert node.end_lineno is not None
    lines.insert(node.end_lineno, " " * node.body[-1].col_offset + "pass\n")
    (root / path).write_text("".join(lines), encoding="utf-8")
    return spec


def gate_run(root: Path, out: Path, *, full: bool, max_children: int | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "reports", "mutation", "--scope", "contract", "--out", str(out)]
    cmd += ["--full"] if full else []
    cmd += [f"--max-children={max_children}"] if max_children else []
    done, wall, cpu = timed_run(cmd, cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    report = json.loads((out / "mutation.json").read_text(encoding="utf-8"))
    return {
        "run": "full" if full else "incremental",
        "exit_status": done.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu.total, 1),
        "mutants": report["total"],
        "ran": report["ran"],
        "reused": report["reused"],
        "score": report["score"],
        "summary": done.stdout.strip().splitlines()[0] if done.stdout.strip() else done.stderr[-500:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.mutation_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--function", default=DEFAULT_FUNCTION, metavar="PATH:NAME", help="the function to change")
    parser.add_argument("--max-children", type=int, default=None, metavar="N", help="mutmut workers (default: CPUs)")
    parser.add_argument("--out", default=str(OUT), metavar="DIR", help="where mutation-bench.{json,md} go")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ppaux-mutation-bench-") as tmp:
        root = copy_checkout(Path(tmp) / "checkout")
        report_dir = Path(tmp) / "report"
        runs = [gate_run(root, report_dir, full=True, max_children=args.max_children)]
        print(json.dumps(runs[-1]), flush=True)
        changed = change_one_function(root, args.function)
        runs.append(gate_run(root, report_dir, full=False, max_children=args.max_children))
        print(json.dumps(runs[-1]), flush=True)
        # Again with nothing changed: every verdict recorded, mutmut not run.
        runs.append({**gate_run(root, report_dir, full=False, max_children=args.max_children), "run": "unchanged"})
        print(json.dumps(runs[-1]), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"changed": changed, "runs": runs}
    (out / "mutation-bench.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"Contract gate: full, incremental after a change to `{changed}`, incremental with no change:",
        "",
        "| run | wall s | CPU s | mutants | run | reused | score | exit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *(
            f"| {r['run']} | {r['wall_s']} | {r['cpu_s']} | {r['mutants']} | {r['ran']} | {r['reused']} | "
            f"{r['score']}% | {r['exit_status']} |"
            for r in runs
        ),
    ]
    (out / "mutation-bench.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
