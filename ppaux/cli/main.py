"""The ``ppaux`` console script (also ``python -m ppaux``).

Each subcommand has a module here with its arguments function and its run function;
bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import ppaux.cli.catalog as catalog
import ppaux.cli.check as check
import ppaux.cli.faults as faults
import ppaux.cli.fuzz as fuzz
import ppaux.cli.mutate as mutate
import ppaux.cli.wire_diff as wire_diff
from ppaux.cli.usage import USAGE_ERROR, USER_ERRORS, OneLineParser

# 128 + SIGPIPE: what a shell reports for a command whose reader closed the pipe.
CLOSED_PIPE = 128 + 13

# name -> (add its arguments, run it, one-line help)
SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {
    "check": (
        check.add_arguments,
        check.run,
        "run the conformance suite against an implementation and write a conformance report",
    ),
    "clauses": (
        catalog.add_clauses_arguments,
        catalog.run_clauses,
        "list the contract's clauses, the ids that reports and tests use",
    ),
    "errors": (catalog.add_errors_arguments, catalog.run_errors, "list the error catalog"),
    "explain": (
        catalog.add_explain_arguments,
        catalog.run_explain,
        "explain an error (by code or message), a kit finding or a contract clause",
    ),
    "faults": (
        faults.add_arguments,
        faults.run,
        "inject each named fault into a real PP relay and print the outcome matrix",
    ),
    "fuzz": (
        fuzz.add_arguments,
        fuzz.run,
        "the nightly fuzz job: fuzz the suite with N workers (and shards), replay or merge what was found",
    ),
    "mutate": (
        mutate.add_arguments,
        mutate.run,
        "mutation-test an implementation with the conformance suite, beside its own tests",
    ),
    "wire-diff": (
        wire_diff.add_arguments,
        wire_diff.run,
        "SGLang's own send/recv_tensor_dict against ppaux's model, on drawn PP dicts over gloo",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ppaux", description="SGLang PP auxiliary-output transport: reference and conformance suite"
    )
    # Subparsers are built with the parser's own class, OneLineParser, so theirs are one line too.
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add_arguments, run, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    # An implementation named as a module imports from the current directory first, as under
    # `python -m ppaux` (the console script's own sys.path[0] is its bin directory).
    path = list(sys.path)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        args = build_parser().parse_args(argv)
        run: Callable[[argparse.Namespace], int] = args._run
        status = int(run(args))
        # Inside the try: a reader that closed the pipe is then told here, not at interpreter exit.
        sys.stdout.flush()
        return status
    except USER_ERRORS as exc:
        print(f"ppaux: error: {exc}" if not str(exc).startswith("ppaux") else f"{exc}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:
        return closed_pipe()
    finally:
        sys.path[:] = path


def closed_pipe() -> int:
    """The reader of our output went away (``ppaux errors | head -1``): end quietly, as Unix tools do,
    with the status of a process that SIGPIPE ended. What is left in stdout's buffer goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return CLOSED_PIPE
