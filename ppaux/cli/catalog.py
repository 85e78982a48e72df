"""``ppaux errors``, ``ppaux explain`` and ``ppaux clauses``: the error catalog and the contract on the terminal."""

from __future__ import annotations

import argparse

from ppaux.cli.usage import UsageError
from ppaux.core import clauses
from ppaux.core.errors import CATALOG, CatalogEntry, lookup, markdown_table


def add_errors_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="print docs/contract.md's error table")


def add_clauses_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="print docs/contract.md's clause table")


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


def run_clauses(args: argparse.Namespace) -> int:
    if args.markdown:
        print(clauses.markdown_table())
        return 0
    for clause in clauses.CLAUSES.values():
        print(f"{clause.id:<18} {clause.statement}")
    return 0
