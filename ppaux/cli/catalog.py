"""``ppaux errors``, ``ppaux explain`` and ``ppaux clauses``: the error catalog and the contract on the terminal."""

from __future__ import annotations

import argparse
import re

from ppaux.cli.usage import UsageError
from ppaux.core import clauses
from ppaux.core.errors import CATALOG, CatalogEntry, lookup, markdown_table
from ppaux.testing.findings import FINDINGS, Finding

# What a pasted line may start with before its code: the exception's class ("KitFailure: K9 ...").
_EXCEPTION_PREFIX = re.compile(r"^[\w.]+(?:Error|Exception|Failure):\s*")


def add_errors_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="print docs/contract.md's error table")


def add_clauses_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="print docs/contract.md's clause table")


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "query",
        nargs="+",
        help="an error code (A1, P1, I1, ...) or the message text from a traceback, a kit code (K1-K15, also as the "
        "kit prints it: 'K9 mismatch: ...') or a contract clause id (add.5, round-trip; `ppaux clauses` lists them)",
    )


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


def render_finding(finding: Finding) -> str:
    fixes = "\n".join(f"  - {fix}" for fix in finding.fixes)
    return (
        f"{finding.code} {finding.kind} (reported by check_observer): {finding.template}\n"
        f"Meaning: {finding.meaning}\nFix:\n{fixes}"
    )


def render_clause(clause: clauses.Clause) -> str:
    sglang = f"differs: {clause.sglang_differs}" if clause.sglang_differs else "same"
    return f"{clause.id} (contract clause): {clause.statement}\nSGLang 0.5.23: {sglang}"


def by_code(code: str) -> str | None:
    """The explanation of an error code, a kit code or a clause id, any case; else ``None``."""
    if code.upper() in CATALOG:
        return render(CATALOG[code.upper()])
    if code.upper() in FINDINGS:
        return render_finding(FINDINGS[code.upper()])
    if code.lower() in clauses.CLAUSES:
        return render_clause(clauses.CLAUSES[code.lower()])
    return None


def explain(query: str) -> str | None:
    """A code, a pasted catalog message, or a line that starts with a code ("K9 mismatch: ...")."""
    entry = lookup(query)
    if entry is not None:
        return render(entry)
    words = _EXCEPTION_PREFIX.sub("", query.strip()).split()
    # The kit prints "K9 mismatch: ..." and "A4 from add: ...": the code is the first word.
    return by_code(words[0].rstrip(":")) if words else None


def run_explain(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    text = explain(query)
    if text is None:
        raise UsageError(
            f"nothing matches {query!r}: not an error code or message (`ppaux errors`), a kit code "
            "(K1-K15, docs/kit.md) or a clause id (`ppaux clauses`)"
        )
    print(text)
    return 0


def run_clauses(args: argparse.Namespace) -> int:
    if args.markdown:
        print(clauses.markdown_table())
        return 0
    for clause in clauses.CLAUSES.values():
        print(f"{clause.id:<18} {clause.statement}")
    return 0
