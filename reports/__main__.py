"""``python -m reports build|mutation|judgements|cli-reference``: exit 0 = fine, 1 = below the gate / failed /
to look at, 2 = usage error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppaux.cli.usage import OneLineParser, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m reports", description="ppaux's reports")
    # Subparsers take the parser's own class: their errors are one line too.
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="gather every report under reports/out/ into reports/index.html")
    b.add_argument(
        "--out", default="reports/out", metavar="DIR", help="where the generated reports are (default reports/out)"
    )
    b.add_argument(
        "--index", default="reports/index.html", metavar="FILE", help="the page to write (default reports/index.html)"
    )
    m = sub.add_parser("mutation", help="mutmut over a scope of ppaux/ in a scratch copy: score per module, gate")
    m.add_argument(
        "--scope",
        choices=("contract", "package"),
        default="contract",
        help="contract: the modules that carry the contract, gated at 100%% (default); "
        "package: all of ppaux/, score reported",
    )
    m.add_argument(
        "--out", default="reports/out/mutation", metavar="DIR", help="report directory (default reports/out/mutation)"
    )
    m.add_argument(
        "--max-children", type=int, default=None, metavar="N", help="mutmut worker processes (default: CPU count)"
    )
    m.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="mutate only these mutants (fnmatch, e.g. 'ppaux.core.transport*'; repeatable); "
        "the score covers them alone",
    )
    m.add_argument(
        "--full",
        action="store_true",
        help="run every mutant (the nightly job); by default a run reuses the verdicts recorded in DIR "
        "for the mutants whose function and tests did not change",
    )
    m.add_argument(
        "--list",
        action="store_true",
        help="list the scope's mutants (those --only picks), each with the line it changes, and run no test",
    )
    j = sub.add_parser(
        "judgements",
        help="the equivalence judgements read against the code as it is, without mutmut: each still on "
        "the function it was judged on (exit 0), or named (exit 1)",
    )
    j.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="equivalents files, relative to the checkout (default: every docs/equivalents/*.json)",
    )
    j.add_argument(
        "--restamp",
        action="store_true",
        help="after looking at each mutant again: stamp the judgements whose function changed with its hash now",
    )
    c = sub.add_parser(
        "cli-reference", help="write docs/cli.md: every ppaux command's --help, rendered from its parser"
    )
    c.add_argument("--page", default="docs/cli.md", metavar="FILE", help="the page to write (default docs/cli.md)")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print(f"reports: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "cli-reference":
        from reports.cli_reference import write

        print(f"reports: wrote {write(Path(args.page))}")
        return 0
    if args.command == "build":
        from reports.build import build

        return build(args.out, args.index)
    if args.command == "judgements":
        from reports.mutation import judgements

        return judgements(args.files, restamp=args.restamp)
    from reports.mutation import run

    return run(args.out, args.max_children, args.only, args.scope, list_only=args.list, full=args.full)


if __name__ == "__main__":
    sys.exit(main())
