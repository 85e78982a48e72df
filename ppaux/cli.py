"""The ``ppaux`` console script (also ``python -m ppaux``).

Each subcommand lives in its own module with ``add_arguments(parser)`` and
``run(args) -> int``; bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

# name -> (module, one-line help); modules are imported only when their command runs.
SUBCOMMANDS = {
    "check": ("ppaux.check", "run the property suite against an implementation and write a conformance report"),
    "errors": ("ppaux.catalog_cli", "list the error catalog"),
    "explain": ("ppaux.catalog_cli", "explain one error, by code or by its message text"),
    "faults": ("ppaux.fault_matrix", "inject each named fault into a real PP relay and print the outcome matrix"),
}

USAGE_ERROR = 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line (a :class:`UsageError`), not a usage dump."""

    def error(self, message: str) -> None:  # one line, not argparse's usage dump
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ppaux", description="SGLang PP auxiliary-output transport: reference and conformance suite")
    # Subparsers are built with the parser's own class, OneLineParser, so theirs are one line too.
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod = importlib.import_module(module)
        (getattr(mod, f"add_{name}_arguments", None) or mod.add_arguments)(p)
        p.set_defaults(_module=module, _name=name)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        mod = importlib.import_module(args._module)
        run = getattr(mod, f"run_{args._name}", None) or mod.run
        return int(run(args))
    except UsageError as exc:
        print(f"ppaux: error: {exc}" if not str(exc).startswith("ppaux") else f"{exc}", file=sys.stderr)
        return USAGE_ERROR
