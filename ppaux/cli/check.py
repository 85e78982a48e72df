"""``ppaux check``: run the shipped conformance suite (:mod:`ppaux.conformance`) against an
implementation and write a conformance report (Markdown, JSON, optionally JUnit XML) with each
clause's statement, verdict, minimal example and reproduce blob."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ppaux.cli.usage import UsageError, example_count, timeout_seconds, worker_count
from ppaux.isolation import DEFAULT_TIMEOUT
from ppaux.regressions import with_regressions
from ppaux.report import ConformanceReport, write_report
from ppaux.report.render import conformance_markdown
from ppaux.testing.advice import rerun_command
from ppaux.testing.impl import DEFAULT_IMPL, load
from ppaux.testing.profiles import TUNINGS
from ppaux.testing.state import STATE, check_directory, report_directory
from ppaux.testing.suite import DEFAULT_MARKS, MOST_WORKERS, SuiteNotRun, SuiteRun, run_installed, usable_workers

# Each option: its flags, then argparse's keywords; the help texts are docs/cli.md's.
OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("--impl", dict(metavar="MODULE_OR_FILE", help="implementation to check (default: ppaux's own)")),
    ("--profile", dict(default="ci", help=f"Hypothesis profile: {', '.join(TUNINGS)} (default: ci)")),
    ("--max-examples", dict(metavar="N", type=example_count, help="examples per property (default: as the profile "
                            "says; ci: 40)")),
    ("--report", dict(metavar="DIR", help="where to write conformance.md and conformance.json "
                      f"(default: {STATE / 'check'} in the current directory)")),
    ("--marks", dict(default=DEFAULT_MARKS, metavar="EXPR", help="which tests (pytest -m expression; default: "
                     f"'{DEFAULT_MARKS}')")),
    ("--tests", dict(metavar="EXPR", help="narrow further by test name (pytest -k expression)")),
    ("--junit", dict(metavar="PATH", help="also write the suite run's JUnit XML there")),
    ("--regressions", dict(metavar="DIR", help="write one standalone regression test (unittest + torch) per broken "
        "clause there, each proven to fail against the implementation and to pass against ppaux's reference; files "
        "of an earlier run there are replaced")),
    ("--timeout", dict(metavar="SECONDS", type=timeout_seconds, default=DEFAULT_TIMEOUT, help="per-call time limit: a "
        f"call into the implementation past it fails as a hang (default: {DEFAULT_TIMEOUT:g})")),
    ("--isolation", dict(choices=("test", "off"), default="test", help="test (default): the tests run in a "
        "supervised forked worker, so that a crash or a hang no signal reaches is a finding; off: in this process "
        "(for a debugger, or to measure what containment costs)")),
    ("--workers", dict(metavar="N", type=worker_count, default=usable_workers(), help="with --isolation test, how "
        "many supervised forked workers run the tests at once, each with its share (default: one per CPU core, at "
        f"most {MOST_WORKERS})")),
]  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for flag, keywords in OPTIONS:
        parser.add_argument(flag, **keywords)


def command_line(args: argparse.Namespace) -> str:
    """The ``ppaux check`` command that runs this check again (for replay advice)."""
    return rerun_command(
        ["ppaux", "check"],
        [
            ("--impl", args.impl, None),
            ("--profile", args.profile, "ci"),
            ("--max-examples", args.max_examples, None),
            ("--marks", args.marks, DEFAULT_MARKS),
            ("--timeout", args.timeout, DEFAULT_TIMEOUT),
        ],
    )


def _implementation(impl: str | None) -> str:
    """The implementation's spec as the suite's run takes it (a file's absolute path); loaded once
    here, so that a bad one is one line before the run (:class:`ImplementationError`)."""
    spec = str(Path(impl).resolve()) if impl and Path(impl).is_file() else impl or ""
    load(spec)
    return spec


def _check_outputs(args: argparse.Namespace, report: Path) -> str | None:
    """Every path the run will write to, checked before the run: a bad one is a usage error, not a lost run.
    The JUnit file's absolute path, if one was asked for."""
    junit = args.junit and Path(args.junit)
    for flag, path in (("--report", report), ("--regressions", args.regressions), ("--junit", junit and junit.parent)):
        why = path and check_directory(Path(path))
        if why:
            raise UsageError(f"{flag}: {why}")
    if junit and junit.is_dir():
        raise UsageError(f"--junit: {args.junit} is a directory")
    return str(junit.resolve()) if junit else None


def run(args: argparse.Namespace) -> int:
    if args.profile not in TUNINGS:
        raise UsageError(f"unknown profile {args.profile!r}; choose from {', '.join(TUNINGS)}")
    spec = _implementation(args.impl)
    out = report_directory(args.report, "check")
    junit = _check_outputs(args, out)
    isolation = None if args.isolation == "test" else args.isolation
    # With --regressions the run records the failing tests' calls: the files are written from them.
    suite = SuiteRun(spec or None, args.marks, args.tests, args.timeout, args.profile, args.max_examples,
                     bool(args.regressions), junit=junit, isolation=isolation, workers=args.workers)  # fmt: skip
    try:
        outcomes = run_installed(suite)
    except SuiteNotRun as exc:
        if exc.option is None:  # pytest's own words, then one line
            sys.stderr.write(exc.printed[-8000:])
        raise UsageError(f"--{exc.option} is {exc}" if exc.option else str(exc)) from None
    impl, command = args.impl or DEFAULT_IMPL, command_line(args)
    report = ConformanceReport.build(
        outcomes, implementation=impl, profile=args.profile, marks=args.marks, timeout_s=args.timeout, command=command
    )
    if args.regressions:
        report = with_regressions(report, spec, Path(args.regressions), args.timeout)
    markdown = conformance_markdown(report)
    written = write_report(out, "conformance", report.to_json(), markdown) + ((Path(args.junit),) if args.junit else ())
    print(markdown)
    print("report written to " + ", ".join(str(p) for p in written))
    if report.regressions is not None:
        files = [f.path for f in report.regressions.files]
        print(f"regression tests written to {args.regressions}: {', '.join(files) if files else 'none'}")
    return 0 if report.verdict == "pass" else 1
