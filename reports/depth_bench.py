"""Depth benchmark (issue 36): time-to-find of bugs planted beyond CI's small scope, for ``ppaux check``
and for ``ppaux fuzz run --budget 5m --workers 2`` (stopped at its first finding), each finding's minimal
example and scope, and whether ``ppaux fuzz replay`` reproduces it.

    python -m reports.depth_bench [--ppaux PATH] [--budget 5m] [--seed N] [--only NAME ...]

``--ppaux`` names the ``ppaux`` executable of an install (default: the one beside this Python); the runs
start from an empty directory, as a user's would. Writes reports/out/depth_bench.json and .md.
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

from tests.planted_deep import DEEP_BUGS, plant_deep

OUT = Path(__file__).resolve().parent / "out"


def _run(cmd: list[str], cwd: Path) -> tuple[int, float, str]:
    # The install's ppaux, as a user's: nothing of this checkout on the path.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    return done.returncode, time.monotonic() - start, done.stdout + done.stderr


def bench_one(name: str, ppaux: str, budget: str, seed: int, work: Path) -> dict[str, object]:
    impl = plant_deep(name, work)
    row: dict[str, object] = {"bug": name, "what": DEEP_BUGS[name].what, "threshold": DEEP_BUGS[name].threshold}
    status, took, _ = _run([ppaux, "check", "--impl", str(impl), "--report", str(work / f"check-{name}")], work)
    check = json.loads((work / f"check-{name}" / "conformance.json").read_text())
    row["check"] = {"found": status == 1, "seconds": round(took, 1), "failed_clauses": check["failed_clauses"]}
    fuzz_dir, db = work / f"fuzz-{name}", work / f"db-{name}"
    fuzz = [ppaux, "fuzz", "run", "--budget", budget, "--workers", "2", "--max-failures", "1", "--seed", str(seed)]
    fuzz += ["--devices", "cpu", "--impl", str(impl), "--db", str(db), "--report", str(fuzz_dir)]
    status, took, _ = _run(fuzz, work)
    summary = json.loads((fuzz_dir / "fuzz.json").read_text())
    first = min(summary["failures"], key=lambda f: f["found_after_s"], default=None)
    row["fuzz"] = {
        "found": first is not None,
        "seconds": round(took, 1),
        "found_after_s": first and first["found_after_s"],
        "examples": summary["examples"],
        "test": first and first["nodeid"],
        "scope": first and (first.get("scope") or {}).get("name"),
        "swarm_seed": first and first.get("swarm_seed"),
        "example": first and first["example"],
    }
    if first is not None:
        replay = [ppaux, "fuzz", "replay", "--devices", "cpu", "--impl", str(impl), "--db", str(db)]
        status, took, _ = _run([*replay, "--report", str(fuzz_dir)], work)
        replayed = json.loads((fuzz_dir / "replay.json").read_text())
        row["replay"] = {"reproduced": bool(replayed["still_failing"]), "seconds": round(took, 1)}
    return row


def render(rows: list[dict[str, Any]], meta: dict[str, object]) -> str:
    lines = [
        "| planted bug | threshold | `ppaux check` | fuzz: found after | fuzz: scope | replay |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        c, f, p = r["check"], r["fuzz"], r.get("replay") or {}
        check = f"found ({c['seconds']} s)" if c["found"] else f"passes ({c['seconds']} s)"
        found = f"{f['found_after_s']} s ({f['test']})" if f["found"] else "not found"
        lines.append(
            f"| {r['bug']} | {r['threshold']} | {check} | {found} | {f['scope'] or '-'} | "
            f"{'reproduced' if p.get('reproduced') else '-'} |"
        )
    return f"Measured {meta['at']}; load average before: {meta['load']}.\n\n" + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.depth_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ppaux", default=str(Path(sys.executable).parent / "ppaux"))
    parser.add_argument("--budget", default="5m")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--only", nargs="*", default=list(DEEP_BUGS), choices=list(DEEP_BUGS))
    args = parser.parse_args(argv)
    meta = {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg()[0], **vars(args)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only:
            rows.append(bench_one(name, args.ppaux, args.budget, args.seed, Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "depth_bench.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    (OUT / "depth_bench.md").write_text(render(rows, meta))
    print(render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
