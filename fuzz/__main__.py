"""``python -m fuzz run|replay``: exit 0 = no failure, 1 = failures, 2 = usage error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from fuzz.options import UsageError
from ppaux.cli.usage import OneLineParser

USAGE_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m fuzz", description="ppaux's nightly fuzz job")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = sub.add_parser("run", help="run the Hypothesis tests under the nightly profile until the budget is spent")
    run.add_argument("--budget", default="30m", help="how long to fuzz: 30m, 1h30m, 90s (default 30m)")
    replay = sub.add_parser("replay", help="re-run every failure saved in the example database")
    for p in (run, replay):
        p.add_argument("--impl", default=None, metavar="MODULE_OR_FILE", help="implementation under test (default: ppaux's own)")
        p.add_argument("--devices", default="auto", choices=("auto", "cpu", "cuda"), help="device placements to cycle through")
        p.add_argument("--db", default=None, metavar="DIR|redis://HOST:PORT", help="example database (default .hypothesis/fuzz-db)")
        p.add_argument("--tests", default=None, metavar="EXPR", help="pytest -k expression over test names, files and marks")
        p.add_argument("--report", default="reports/out/fuzz", metavar="DIR", help="report directory (default reports/out/fuzz)")
        p.add_argument("--timeout", default=None, metavar="SECONDS",
                       help="per-call time limit on the implementation: a call past it fails as a hang (default 10)")
    run.add_argument("--seed", type=int, default=None, help="seed round N with SEED+N (a reproducible run); default: random")
    run.add_argument("--max-failures", type=int, default=None, metavar="N", help="stop once N distinct failures are found")
    run.add_argument("--progress-every", type=float, default=10.0, metavar="S", help="seconds between progress lines when not on a terminal")
    return parser


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _check_common(args: argparse.Namespace) -> None:
    from fuzz.database import DatabaseError, open_database
    from ppaux.isolation import parse_timeout
    from ppaux.testing.impl import ImplementationError, load

    if args.timeout is not None:
        try:
            args.timeout = parse_timeout(args.timeout)
        except ValueError as exc:
            raise UsageError(f"--timeout: {exc}") from None
    if args.impl:
        try:
            load(args.impl)
        except ImplementationError as exc:
            raise UsageError(f"--impl: {exc}") from None
        # Relative to where the user stands; the rounds run from the project root.
        if args.impl.endswith(".py") or Path(args.impl).is_file():
            args.impl = str(Path(args.impl).resolve())
    if args.db and "://" not in args.db:
        args.db = str(Path(args.db).resolve())
    try:
        open_database(args.db)
    except DatabaseError as exc:
        raise UsageError(str(exc)) from None
    args.report = Path(args.report).resolve()


def cmd_run(args: argparse.Namespace) -> int:
    from fuzz.database import describe
    from fuzz.options import parse_budget, placements
    from fuzz.progress import Progress
    from fuzz.report import write_run
    from fuzz.runner import FuzzRun
    from ppaux.testing.profiles import PROFILES

    budget = parse_budget(args.budget)
    if args.progress_every <= 0:
        raise UsageError("--progress-every must be a positive number of seconds")
    if args.max_failures is not None and args.max_failures < 1:
        raise UsageError("--max-failures must be at least 1")
    where, note = placements(args.devices, _cuda_count())
    _check_common(args)
    progress = Progress(sys.stderr, budget, every=args.progress_every)
    if note:
        progress.say(f"fuzz: {note}")
    run = FuzzRun(budget=budget, placements=where, db=describe(args.db), impl=args.impl, tests=args.tests,
                  report_dir=args.report, seed=args.seed, max_failures=args.max_failures, timeout=args.timeout, nightly_max_examples=PROFILES["nightly"].max_examples, progress=progress)
    try:
        run.run()
    finally:
        path = write_run(run.summary(), args.report)
        progress.say(f"fuzz: report {path}")
    return 1 if run.failures else 0


def cmd_replay(args: argparse.Namespace) -> int:
    from fuzz.database import describe
    from fuzz.options import placements
    from fuzz.report import write_replay
    from fuzz.runner import Replay

    where, _ = placements(args.devices, _cuda_count())
    _check_common(args)
    replay = Replay(db=describe(args.db), impl=args.impl, tests=args.tests, placement=where[0], report_dir=args.report,
                    timeout=args.timeout)
    replay.run()
    summary = replay.summary()
    path = write_replay(summary, args.report)
    print(f"fuzz replay: {summary['saved_examples']} saved examples in {summary['tests_with_saved_failures']} tests; "
          f"still failing: {len(summary['still_failing'])}; no longer failing: {len(summary['no_longer_failing'])}")
    for row in summary["still_failing"]:
        print(f"  FAILS {row['nodeid']}: {row.get('error') or ''}")
    print(f"fuzz replay: report {path}")
    return 1 if summary["still_failing"] else 0


def main(argv: Optional[List[str]] = None) -> int:
    from fuzz.runner import RunError

    try:
        args = build_parser().parse_args(argv)
        return cmd_run(args) if args.command == "run" else cmd_replay(args)
    except (UsageError, RunError) as exc:
        print(f"fuzz: error: {exc}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
