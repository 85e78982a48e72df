"""Benchmarks of the PP auxiliary relay: ``python -m reports.bench`` writes reports/out/bench.{json,md}.

1. add+pop of k aux tensors in a dict of n keys, against inserting and deleting the same keys
   in a plain dict (the ratio is the transport's overhead).
2. gloo relay of a dict carrying one aux tensor of 1 KB, 1 MB and 64 MB between two worker
   processes: ppaux's model of SGLang's send/recv_tensor_dict, SGLang's own code (release
   0.5.23, when it can be had), and raw gloo send/recv of the same tensor, on the same ranks;
   the goal is at least 0.9x raw throughput from 1 MB up.
3. the extra cost of integrity mode: add+pop in process, and the gloo relay with the manifest.
4. the wall time of the main job, ``ppaux check`` on the reference in a fresh interpreter (the
   goal: at most 15 s on 2 cores).
5. with ``--test-runs N``: the README's test command from this checkout, N times from each state of the
   checkout's bytecode cache (cold, a fresh clone's first run, warm), in turn (the goal: at most 30 s
   on 2 cores).

Numbers are medians of repeated runs on whatever machine runs this; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import ppaux.relay.sglang as sglang
from ppaux.core.integrity import INTEGRITY_TRANSPORT
from ppaux.core.transport import _OUTPUT_PREFIX, SGLANG_TRANSPORT
from ppaux.relay import gloo
from ppaux.relay.wire import recv_tensor_dict, send_tensor_dict
from reports import bytecode
from reports.machine import speed_reference

OUT = os.path.join("reports", "out")
SIZES = {"1 KB": 1 << 10, "1 MB": 1 << 20, "64 MB": 64 << 20}


class _Output:
    def __init__(self, payload: dict[str, torch.Tensor]) -> None:
        self.payload = payload

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        return self.payload


class _Observer:
    def from_pp_tensors(self, tensors: Any) -> Any:
        return tensors


def _median_seconds(fn: Callable[[], object], *, repeat: int, number: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


def bench_add_pop(repeat: int) -> list[dict[str, Any]]:
    rows = []
    for n in (8, 64):
        for k in (1, 4, 16):
            base = {f"key{i}": torch.zeros(1) for i in range(n - k)}
            payload = {f"aux{i}": torch.zeros(1) for i in range(k)}
            out, obs = _Output(payload), _Observer()
            staged = {_OUTPUT_PREFIX + name: t for name, t in payload.items()}

            # Bound as defaults: the functions are timed within this iteration, on this iteration's dicts.
            def transport(base: dict[str, Any] = base, out: _Output = out, obs: _Observer = obs) -> None:
                SGLANG_TRANSPORT.add(base, out)
                SGLANG_TRANSPORT.pop(base, obs)

            def plain(base: dict[str, Any] = base, staged: dict[str, Any] = staged) -> None:
                base.update(staged)
                for key in staged:
                    del base[key]

            t_transport = _median_seconds(transport, repeat=repeat, number=2000)
            t_plain = _median_seconds(plain, repeat=repeat, number=2000)
            rows.append(
                {
                    "n_keys": n,
                    "k_aux": k,
                    "add_pop_us": t_transport * 1e6,
                    "plain_dict_us": t_plain * 1e6,
                    "ratio": t_transport / t_plain,
                }
            )
    return rows


def bench_integrity_in_process(repeat: int) -> list[dict[str, Any]]:
    rows = []
    for label, nbytes in SIZES.items():
        payload = {"scores": torch.rand(nbytes // 4)}
        out, obs = _Output(payload), _Observer()
        d: dict[str, Any] = {"next_token_ids": torch.arange(8)}

        # Bound as defaults: the functions are timed within this iteration, on this iteration's dicts.
        def plain(d: dict[str, Any] = d, out: _Output = out, obs: _Observer = obs) -> None:
            SGLANG_TRANSPORT.add(d, out)
            SGLANG_TRANSPORT.pop(d, obs)

        def checked(d: dict[str, Any] = d, out: _Output = out, obs: _Observer = obs) -> None:
            INTEGRITY_TRANSPORT.add(d, out)
            INTEGRITY_TRANSPORT.pop(d, obs)

        number = 200 if nbytes < (1 << 21) else 2
        t_plain = _median_seconds(plain, repeat=repeat, number=number)
        t_checked = _median_seconds(checked, repeat=repeat, number=number)
        rows.append(
            {
                "aux_size": label,
                "add_pop_us": t_plain * 1e6,
                "integrity_add_pop_us": t_checked * 1e6,
                "extra_us": (t_checked - t_plain) * 1e6,
            }
        )
    return rows


def _relay_rank(ctx: Any, nbytes: int, reps: int, mode: str) -> float:
    """Rank 0 sends ``reps`` times, rank 1 receives; rank 1 returns seconds per message."""
    tensor = torch.rand(nbytes // 4)
    peer = ctx.channel(1 - ctx.rank)
    warm = torch.zeros(1)
    # One round trip first, so that both ranks start the clock together.
    if ctx.rank == 0:
        peer.send(warm, "cpu")
        peer.recv(warm, "cpu")
    else:
        peer.recv(warm, "cpu")
        peer.send(warm, "cpu")
    start = time.perf_counter()
    for _ in range(reps):
        if mode == "sglang":
            # The Boundary keeps every message's tensor for the fault matrix; kept here, 200
            # received 1 MB tensors would make each new one cost fresh pages.
            ctx.sglang.boundary.messages.clear()
        if mode == "raw":
            if ctx.rank == 0:
                peer.send(tensor, "cpu")
            else:
                peer.recv(torch.empty_like(tensor), "cpu")
            continue
        if ctx.rank == 0:
            d: dict[str, Any] = {"next_token_ids": torch.arange(8)}
            output = _Output({"scores": tensor})
            if mode == "integrity":
                INTEGRITY_TRANSPORT.add(d, output)
            else:
                SGLANG_TRANSPORT.add(d, output)
            d["__msg_type__"] = "output"
            if mode == "sglang":
                for work in ctx.sglang.pp.send_tensor_dict(d, dst=1, async_send=True):
                    work.work.wait()
            else:
                send_tensor_dict(peer, d, async_send=True)
        else:
            got = ctx.sglang.pp.recv_tensor_dict(src=0) if mode == "sglang" else recv_tensor_dict(peer)
            if mode == "integrity":
                INTEGRITY_TRANSPORT.pop(got, _Observer())
            else:
                SGLANG_TRANSPORT.pop(got, _Observer())
    return (time.perf_counter() - start) / reps


def bench_gloo(repeat: int) -> list[dict[str, Any]]:
    # Workers import the rank function by module name, which is not __main__ under `python -m`.
    from reports.bench import _relay_rank as rank_fn

    try:
        extension = (sglang.join, (sglang.DEFAULT_VERSION, sglang.wire_source(sglang.DEFAULT_VERSION)))
        modes: tuple[str, ...] = ("raw", "relay", "sglang", "integrity")
    except (sglang.ReleaseUnavailable, sglang.ReleaseChanged) as exc:
        print(f"reports.bench: SGLang's own relay left out: {exc}")
        extension, modes = None, ("raw", "relay", "integrity")
    world = gloo.GlooWorld(2, timeout=120.0, extension=extension)
    rows = []
    try:
        for label, nbytes in SIZES.items():
            reps = 200 if nbytes < (1 << 20) else 50 if nbytes <= (1 << 20) else 4
            row: dict[str, Any] = {"aux_size": label, "bytes": nbytes}
            for mode in modes:
                times = []
                for i in range(repeat + 1):
                    out = world.run(
                        {0: (rank_fn, (nbytes, reps, mode)), 1: (rank_fn, (nbytes, reps, mode))}, timeout=300.0
                    )
                    gloo.raise_failure(out)
                    if i:  # the first run only warms the pair up
                        times.append(out[1].value)
                seconds = statistics.median(times)
                row[f"{mode}_ms"] = seconds * 1e3
                row[f"{mode}_MBps"] = nbytes / seconds / 1e6
            row["relay_vs_raw"] = row["relay_MBps"] / row["raw_MBps"]
            if "sglang" in modes:
                row["sglang_vs_raw"] = row["sglang_MBps"] / row["raw_MBps"]
                row["relay_vs_sglang"] = row["relay_MBps"] / row["sglang_MBps"]
            row["integrity_vs_relay"] = row["integrity_MBps"] / row["relay_MBps"]
            rows.append(row)
    finally:
        world.stop()
    return rows


def bench_check(runs: int) -> list[dict[str, Any]]:
    """``python -m ppaux check`` on the reference, from a fresh interpreter to its exit."""
    with tempfile.TemporaryDirectory() as report:
        cmd = bytecode.ppaux_check(report)
        seconds = _median_seconds(lambda: subprocess.run(cmd, check=True, capture_output=True), repeat=runs, number=1)
    # Whether this run may write bytecode; what is read is whatever the checkout has cached (reports.bytecode).
    writing = "off" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    return [
        {
            "command": "ppaux check (reference, profile ci)",
            "runs": runs,
            "median s": seconds,
            "bytecode writing": writing,
        }
    ]


# pytest's own figure is the last line's "in 58.38s".
_PYTEST_SECONDS = re.compile(r" in ([0-9.]+)s")


def bench_test_run(runs: int) -> list[dict[str, Any]]:
    """The README's test command from the checkout this file is in, ``runs`` times from each state of the
    checkout's bytecode cache (:mod:`reports.bytecode`: cold, nothing cached nor written; first, as the
    README's first command leaves a fresh clone; warm), in turn, so that a machine that slows down for a
    while slows each."""
    checkout = Path(__file__).resolve().parent.parent
    bytecode.warm_up(checkout, bytecode.readme_tests())
    seen: dict[str, list[tuple[float, float, float]]] = {state: [] for state in bytecode.STATES}
    for _ in range(runs):
        for cache in seen:
            proc, wall, cpu = bytecode.timed_readme_tests(cache, checkout)
            if proc.returncode != 0:
                command = " ".join(bytecode.README_TESTS)
                raise RuntimeError(f"{command} exited {proc.returncode}:\n{proc.stdout[-2000:]}")
            figures = _PYTEST_SECONDS.findall(proc.stdout.strip().splitlines()[-1])
            seen[cache].append((wall, float(figures[-1]), cpu.total))
    return [
        {
            "command": " ".join(bytecode.README_TESTS),
            "bytecode cache": cache,
            "runs": runs,
            "median wall s": statistics.median(w for w, _, _ in rows),
            "wall s, each": ", ".join(f"{w:.1f}" for w, _, _ in rows),
            "pytest's s, each": ", ".join(f"{p:.1f}" for _, p, _ in rows),
            # user + system time of the command and every process it waited for
            "CPU s, each": ", ".join(f"{c:.0f}" for _, _, c in rows),
        }
        for cache, rows in seen.items()
    ]


def _table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])

    def fmt(v: object) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
    lines += ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the median is kept (default 5)")
    parser.add_argument(
        "--check-runs", type=int, default=1, help="runs of ppaux check to time (default 1; the median is kept)"
    )
    parser.add_argument(
        "--test-runs",
        type=int,
        default=0,
        help="runs of the README's test command from each state of the bytecode cache (default 0: not timed; "
        "about a minute a run)",
    )
    parser.add_argument("--out", default=OUT, help=f"output directory (default {OUT})")
    args = parser.parse_args(argv)
    speed_before = speed_reference()
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "add_pop": bench_add_pop(args.repeat),
        "integrity_in_process": bench_integrity_in_process(args.repeat),
        "gloo_relay": bench_gloo(args.repeat),
        "check": bench_check(args.check_runs),
        "test_run": bench_test_run(args.test_runs) if args.test_runs else [],
    }
    results["machine"]["speed reference s, before and after"] = [round(speed_before, 2), round(speed_reference(), 2)]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=2)
    md = (
        "\n\n".join(
            [
                "## PP auxiliary relay benchmarks",
                f"Machine: {results['machine']}",
                "### add+pop vs plain dict insert/delete (microseconds per add+pop)",
                _table(results["add_pop"]),
                "### Integrity mode in process (add+pop with one aux tensor)",
                _table(results["integrity_in_process"]),
                (
                    "### gloo relay: ppaux's model (relay), SGLang's own code (sglang), raw gloo send/recv "
                    "(one aux tensor per dict, 2 processes on 127.0.0.1)"
                ),
                _table(results["gloo_relay"]),
                (
                    "### The main job: `ppaux check` on the reference, wall time from a fresh interpreter "
                    "(goal: at most 15 s on 2 cores)"
                ),
                _table(results["check"]),
                *(
                    [
                        "### The README's test command, from this checkout (goal: at most 30 s on 2 cores)",
                        _table(results["test_run"]),
                    ]
                    if results["test_run"]
                    else []
                ),
            ]
        )
        + "\n"
    )
    with open(os.path.join(args.out, "bench.md"), "w", encoding="utf-8") as fh:
        fh.write(md)
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
