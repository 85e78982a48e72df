"""``ppaux check``: the property suite against an implementation, as a conformance report."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--impl", default=None, metavar="MODULE_OR_FILE", help="implementation to check (default: ppaux's own)")
    parser.add_argument("--profile", default="ci", help="Hypothesis profile (ci, dev, nightly, mutation)")
    parser.add_argument("--report", default="reports/out/conformance", metavar="DIR", help="where to write conformance.md and conformance.json")


def run(args: argparse.Namespace) -> int:  # pragma: no cover - filled in next
    raise NotImplementedError
