"""``ppaux errors`` and ``ppaux explain``: the error catalog on the terminal."""

from __future__ import annotations

import argparse

from ppaux.cli import UsageError
from ppaux.errors import CATALOG, CatalogEntry, lookup, markdown_table


def add_errors_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="print the README's error table")


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="+", help="a code (A1-A5, P1-P4, ...) or the message text from a traceback")


def render(entry: CatalogEntry) -> str:
    fixes = "\n".join(f"  - {fix}" for fix in entry.fixes)
    return (
        f"{entry.code} (raised by {entry.raised_by}): {entry.template}\n"
        f"When: {entry.when}\nMeaning: {entry.meaning}\nFix:\n{fixes}"
    )


def run_errors(args: argparse.Namespace) -> int:
    if args.markdown:
        print(markdown_table())
        return 0
    for entry in CATALOG.values():
        print(f"{entry.code}  {entry.raised_by:<5} {entry.template}")
    return 0


def run_explain(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    entry = lookup(query)
    if entry is None:
        raise UsageError(f"no catalog entry matches {query!r}; `ppaux errors` lists them")
    print(render(entry))
    return 0
