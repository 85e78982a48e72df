"""``ppaux fuzz run|replay|report`` (and the checkout's ``python -m fuzz``): exit 0 = no failure,
1 = failures (or a dead worker, or nothing fuzzed), 2 = usage error (:class:`FuzzUsageError`, one line)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ppaux.fuzz.options import FuzzUsageError, parse_shard
from ppaux.isolation import DEFAULT_TIMEOUT, MONOTONIC, Clock
from ppaux.regressions import module_search_path, write_regressions
from ppaux.report import FuzzFailure, RegressionSummary, TestOutcome
from ppaux.report.conformance import UNCLASSIFIED
from ppaux.testing.impl import DEFAULT_IMPL
from ppaux.testing.state import STATE, StateError, check_directory, report_directory

__all__ = ["add_arguments", "run"]


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--impl", default=None, metavar="MODULE_OR_FILE", help="implementation under test (default: ppaux's own)"
    )
    p.add_argument(
        "--devices",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="auto: each worker on one GPU in turn (and two, where two are visible), then on the CPU; "
        "cpu: GPUs hidden; cuda: GPUs only",
    )
    p.add_argument(
        "--db", default=None, metavar="DIR|redis://HOST:PORT", help="example database (default .hypothesis/fuzz-db)"
    )
    p.add_argument(
        "--tests", default=None, metavar="EXPR", help="pytest -k expression over test names, files and marks"
    )
    p.add_argument(
        "--report", metavar="DIR", help=f"report directory (default {STATE / 'fuzz'} in the current directory)"
    )
    p.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS",
        help="per-call time limit on the implementation: a call past it fails as a hang (default 10)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Subparsers take the parser's own class: their errors are one line too.
    sub = parser.add_subparsers(dest="fuzz_command", required=True, metavar="{run,replay,report}")
    run_p = sub.add_parser("run", help="fuzz the Hypothesis tests under the nightly profile until the budget is spent")
    run_p.add_argument("--budget", default="30m", help="how long to fuzz: 30m, 1h30m, 90s (default 30m)")
    run_p.add_argument(
        "--workers",
        default="auto",
        metavar="N|auto",
        help="worker processes side by side on the one database (default auto: one per core)",
    )
    run_p.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="fuzz only this machine's share of the tests, the K-th of N (a stable split by test id)",
    )
    replay_p = sub.add_parser("replay", help="re-run every failure saved in the example database, from any machine")
    for p in (run_p, replay_p):
        _add_common(p)
    run_p.add_argument(
        "--seed", type=int, default=None, help="seed each round from SEED (a reproducible run); default: random"
    )
    run_p.add_argument(
        "--max-failures", type=int, default=None, metavar="N", help="stop once N distinct failures are found"
    )
    run_p.add_argument(
        "--progress-every",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between progress lines when not on a terminal",
    )
    replay_p.add_argument(
        "--regressions",
        default=None,
        metavar="DIR",
        help="write a standalone regression test (unittest + torch) per clause still failing there, "
        "as ppaux check --regressions does",
    )
    report_p = sub.add_parser("report", help="merge the fuzz.json of several shards' runs into one report")
    report_p.add_argument(
        "--merge", nargs="+", required=True, metavar="DIR", help="report directories of the shards' runs"
    )
    report_p.add_argument(
        "--report",
        metavar="DIR",
        help=f"where to write the merged fuzz.md and fuzz.json (default {STATE / 'fuzz'} in the current directory)",
    )


def _report_directory(report: str | None) -> Path:
    """``--report``'s directory, else .ppaux/fuzz (:func:`~ppaux.testing.state.report_directory`), resolved."""
    from ppaux.fuzz.report import check_report_dir

    try:
        return check_report_dir(report_directory(report, "fuzz"))
    except StateError as exc:
        raise FuzzUsageError(str(exc)) from None


def _suite(args: argparse.Namespace, *, replay: bool) -> tuple[Any, Path]:  # (a rounds.Suite, imported here only)
    """The rounds' common ground from the options, each bad one a :class:`FuzzUsageError`."""
    from ppaux.fuzz.database import DEFAULT_DB, DatabaseError, open_database
    from ppaux.fuzz.rounds import Suite
    from ppaux.isolation import parse_timeout
    from ppaux.testing.impl import ImplementationError, load

    timeout = None
    if args.timeout is not None:
        try:
            timeout = parse_timeout(args.timeout)
        except ValueError as exc:
            raise FuzzUsageError(f"--timeout: {exc}") from None
    impl = args.impl
    if impl:
        try:
            load(impl)
        except ImplementationError as exc:
            raise FuzzUsageError(f"--impl: {exc}") from None
        # Relative to where the user stands; a checkout's rounds run from its root.
        if impl.endswith(".py") or Path(impl).is_file():
            impl = str(Path(impl).resolve())
    # Where the user stands, as the report will name it: a checkout's rounds run from its root.
    db = args.db if args.db and "://" in args.db else str(Path(args.db or DEFAULT_DB).resolve())
    try:
        open_database(db, must_exist=replay)
    except DatabaseError as exc:
        raise FuzzUsageError(str(exc)) from None
    shard = parse_shard(getattr(args, "shard", None))
    # Last: a usage error above leaves no .ppaux behind.
    report = _report_directory(args.report)
    return Suite(db=db, workdir=report / "rounds", tests=args.tests, impl=impl, timeout=timeout, shard=shard), report


def cmd_run(args: argparse.Namespace, clock: Clock = MONOTONIC) -> int:
    """``ppaux fuzz run``; ``clock``: what the run's budget and its rounds' grace are measured on."""
    from ppaux.fuzz.options import parse_budget, parse_workers, placements, visible_gpus
    from ppaux.fuzz.report import write_run
    from ppaux.fuzz.runner import FuzzRun, Worker, verdict
    from ppaux.testing.profiles import TUNINGS
    from ppaux.testing.progress import Progress

    budget = parse_budget(args.budget)
    count = parse_workers(args.workers)
    if args.progress_every <= 0:
        raise FuzzUsageError("--progress-every must be a positive number of seconds")
    if args.max_failures is not None and args.max_failures < 1:
        raise FuzzUsageError("--max-failures must be at least 1")
    suite, report = _suite(args, replay=False)
    gpus = [] if args.devices == "cpu" else visible_gpus()
    workers = [Worker(i + 1, placements(args.devices, gpus, i)[0]) for i in range(count)]
    progress = Progress(sys.stderr, every=args.progress_every)
    note = placements(args.devices, gpus)[1]
    if note:
        progress.say(f"fuzz: {note}")
    run = FuzzRun(
        budget=budget,
        suite=suite,
        workers=workers,
        seed=args.seed,
        max_failures=args.max_failures,
        nightly_max_examples=TUNINGS["nightly"]["max_examples"],
        progress=progress,
        clock=clock,
    )
    try:
        run.run()
    finally:
        summary = run.summary()
        path = write_run(summary, report)
        progress.say(f"fuzz: report {path}")
    status, why = verdict(summary)
    if why:
        progress.say(f"fuzz: {why}")
    return status


def cmd_replay(args: argparse.Namespace) -> int:
    from ppaux.fuzz.options import placements, visible_gpus
    from ppaux.fuzz.report import write_replay
    from ppaux.fuzz.runner import Replay

    gpus = [] if args.devices == "cpu" else visible_gpus()
    placements(args.devices, gpus)  # --devices cuda without a GPU: one line, exit 2
    suite, report = _suite(args, replay=True)
    why = args.regressions and check_directory(Path(args.regressions))
    if why:
        raise FuzzUsageError(f"--regressions: {why}")
    suite = dataclasses.replace(suite, record_calls=bool(args.regressions))
    # Every GPU visible, as when the placements of all workers are taken together.
    replay = Replay(
        suite=suite, placement="cuda:" + ",".join(gpus) if gpus else "cpu", depths=_run_depths(report, suite.db)
    )
    replay.run()
    summary = replay.summary()
    if args.regressions:
        summary = dataclasses.replace(
            summary, regressions=_write_regressions(summary.still_failing, suite, Path(args.regressions))
        )
    path = write_replay(summary, report)
    print(
        f"fuzz replay: {summary.saved_examples} saved examples in {summary.tests_with_saved_failures} tests; "
        f"still failing: {len(summary.still_failing)}; no longer failing: {len(summary.no_longer_failing)}"
    )
    for failure in summary.still_failing:
        print(f"  FAILS {failure.nodeid}: {failure.error or ''}")
    written = summary.regressions
    said = (
        []
        if written is None
        else [f"  REGRESSION TEST {f.path} ({f.clause}): {', '.join(f.tests)}" for f in written.files]
        + [f"  NO REGRESSION TEST for {r.nodeid}: {r.why}" for r in written.refused]
    )
    print("\n".join(said), end="\n" if said else "")
    print(f"fuzz replay: report {path}")
    return 1 if summary.verdict == "fail" else 0


def _run_depths(report: Path, db: str) -> Any:  # list[RoundDepth], imported here only
    """The scopes and swarm configurations the saved failures were found at, each replayed as found: those
    the example database keeps and those of the run whose report is in ``report`` (its fuzz.json); with
    neither, the default scope."""
    from ppaux.fuzz.database import open_database
    from ppaux.fuzz.depth import RoundDepth, saved_depths
    from ppaux.fuzz.report import read_run

    found = saved_depths(open_database(db, must_exist=True))
    if (report / "fuzz.json").is_file():
        found += [RoundDepth(f.scope, f.swarm, f.swarm_seed) for f in read_run(report, "--report").failures]
    return [RoundDepth(), *(d for i, d in enumerate(found) if d not in found[:i] and d != RoundDepth())]


def _write_regressions(still_failing: Sequence[FuzzFailure], suite: Any, folder: Path) -> RegressionSummary:
    """The still-failing tests as regression files, one per clause, proven as ``ppaux check`` proves them;
    what was written, removed and refused."""
    failed: dict[str, list[TestOutcome]] = {}
    for f in still_failing:
        test = TestOutcome(f.nodeid, f.clause, "failed", error=f.error, finding=f.finding, example=f.example,
                           blob=f.blob, scenario=f.scenario, scenario_error=f.scenario_error)  # fmt: skip
        failed.setdefault(f.clause or UNCLASSIFIED, []).append(test)
    spec = suite.impl or DEFAULT_IMPL
    summary, _ = write_regressions(
        failed, spec, folder, suite.timeout or DEFAULT_TIMEOUT, module_search_path(spec, suite.cwd)
    )
    return summary


def cmd_report(args: argparse.Namespace) -> int:
    from ppaux.fuzz.report import check_report_dir, merge_runs, read_run, write_run
    from ppaux.fuzz.runner import verdict

    dirs = [check_report_dir(Path(d), "--merge") for d in args.merge]
    twice = next((d for i, d in enumerate(dirs) if d in dirs[:i]), None)
    if twice is not None:
        raise FuzzUsageError(f"--merge {str(twice)!r} is named twice: its rounds would count twice")
    runs = [read_run(d) for d in dirs]
    out = _report_directory(args.report)
    summary = merge_runs(runs)
    path = write_run(summary, out)
    status, why = verdict(summary)
    print(
        f"fuzz report: {len(runs)} runs merged: {summary.examples:,} examples, {len(summary.rounds)} rounds, "
        f"{len(summary.failures)} failures" + (f"; {why}" if why else "")
    )
    print(f"fuzz report: {path}")
    return status


def run(args: argparse.Namespace) -> int:
    command = {"run": cmd_run, "replay": cmd_replay, "report": cmd_report}[args.fuzz_command]
    return command(args)
