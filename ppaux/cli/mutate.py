"""``ppaux mutate``: how many bugs in an implementation would the conformance suite catch, and
how many would that project's own tests catch? The command line of :mod:`ppaux.mutation.mutate`,
which runs it; bad input is one line and exit status 2.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from ppaux.cli.usage import timeout_seconds
from ppaux.isolation import DEFAULT_TIMEOUT
from ppaux.mutation.mutate import MutateOptions, mutate
from ppaux.testing.profiles import TUNINGS
from ppaux.testing.state import STATE
from ppaux.testing.suite import DEFAULT_MARKS, suite_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--impl",
        required=True,
        metavar="MODULE_OR_FILE",
        help="the implementation to mutate (its module is copied, never changed)",
    )
    parser.add_argument(
        "--baseline",
        metavar="COMMAND",
        help="also run each mutant against this command (e.g. the project's own tests); "
        "exit 0 means the mutant survived",
    )
    parser.add_argument(
        "--gate", type=float, default=100.0, metavar="PCT", help="the score ppaux's suite must reach (default 100)"
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="where to write mutate.md, mutate.json and the scratch project "
        f"(default {STATE / 'mutate'} in the current directory)",
    )
    parser.add_argument(
        "--marks",
        default=DEFAULT_MARKS,
        metavar="EXPR",
        help=f"which tests may kill (pytest -m expression; default: '{DEFAULT_MARKS}')",
    )
    parser.add_argument("--tests", metavar="EXPR", help="narrow the killing tests by name (pytest -k expression)")
    parser.add_argument(
        "--profile", default="mutation", help=f"Hypothesis profile: {', '.join(TUNINGS)} (default: mutation)"
    )
    parser.add_argument(
        "--equivalents",
        metavar="FILE",
        help="JSON of mutants judged equivalent, keyed by identity (docs/mutation.md; or the older "
        "{mutmut name: reason}): listed with their reason, left out of the score",
    )
    parser.add_argument(
        "--max-children", type=int, default=None, metavar="N", help="parallel mutant runs (default: the CPU count)"
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=timeout_seconds,
        default=DEFAULT_TIMEOUT,
        help="per-call time limit: a mutant whose call does not return within it is killed as a hang "
        f"(default: {DEFAULT_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    options = MutateOptions(**{f.name: getattr(args, f.name) for f in fields(MutateOptions)})
    return mutate(options, suite_files())
