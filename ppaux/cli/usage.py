"""What every ``ppaux`` subcommand shares: bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
from typing import NoReturn

from ppaux.fuzz.options import FuzzUsageError
from ppaux.isolation import parse_timeout
from ppaux.mutation.mutate import MutateInputError
from ppaux.report import ReportFormatError
from ppaux.testing.impl import ImplementationError
from ppaux.testing.profiles import parse_max_examples
from ppaux.testing.state import StateError
from ppaux.testing.suite import parse_workers

USAGE_ERROR = 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


# Every kind of bad input, each raised where it is found with its one line; ppaux.cli.main prints
# the line and exits 2 for all of them, in one place.
USER_ERRORS = (UsageError, ImplementationError, StateError, FuzzUsageError, MutateInputError, ReportFormatError)


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line (a :class:`UsageError`), not a usage dump."""

    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage dump
        raise UsageError(f"{self.prog}: {message}")


def example_count(text: str) -> int | None:
    """argparse type of ``--max-examples``: a whole number of examples >= 1."""
    try:
        return parse_max_examples(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def worker_count(text: str) -> int:
    """argparse type of ``--workers``: a whole number of workers >= 1."""
    try:
        return parse_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def timeout_seconds(text: str) -> float:
    """argparse type of ``--timeout``: a positive number of seconds."""
    try:
        return parse_timeout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
