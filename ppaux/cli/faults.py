"""``ppaux faults``: print the fault matrix (:mod:`ppaux.relay.matrix`) and write it as Markdown and JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from ppaux.cli.usage import UsageError
from ppaux.relay.faults import FAULTS, Fault, Verdict
from ppaux.relay.hop import CHANNELS
from ppaux.relay.matrix import EXPECTED, matrix
from ppaux.report import FaultCell, FaultOutcome, FaultsReport, write_report
from ppaux.report.render import faults_markdown
from ppaux.testing.state import STATE, report_directory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--channel",
        choices=CHANNELS,
        default="loopback",
        help="loopback (threads), gloo (processes on 127.0.0.1), or sglang (the same, over SGLang's own wire code)",
    )
    parser.add_argument(
        "--integrity", action="store_true", help="add/pop with the integrity manifest (off by default, as SGLang)"
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="where to write faults-<channel>[-integrity].md/.json "
        f"(default {STATE / 'faults'} in the current directory)",
    )
    parser.add_argument(
        "--timeout", type=float, default=1.0, metavar="S", help="gloo watchdog per run, seconds (default 1)"
    )


def build_report(
    cells: Mapping[str, Verdict],
    *,
    channel: str,
    integrity: bool,
    expected: Mapping[str, str],
    model: Mapping[str, Verdict] | None = None,
) -> FaultsReport:
    """The matrix's report: each fault's cell with what the fault does and the expected outcome;
    ``model``, when given, is ppaux's model's outcome beside SGLang's code's."""
    return FaultsReport(
        channel=channel,
        integrity=integrity,
        cells={
            name: FaultCell(
                does=FAULTS[name].doc if name in FAULTS else Fault.doc,
                outcome=v.outcome,
                detail=v.detail,
                expected=expected[name],
                model=None if model is None else FaultOutcome(model[name].outcome, model[name].detail),
            )
            for name, v in cells.items()
        },
    )


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    out = report_directory(args.report, "faults")
    cells = matrix(channel=args.channel, integrity=args.integrity, timeout=args.timeout)
    # Over SGLang's own code, ppaux's model of it (on gloo) stands beside it, fault by fault.
    model = matrix(channel="gloo", integrity=args.integrity, timeout=args.timeout) if args.channel == "sglang" else None
    expected = EXPECTED[(args.channel, args.integrity)]
    report = build_report(cells, channel=args.channel, integrity=args.integrity, expected=expected, model=model)
    text = faults_markdown(report)
    stem = f"faults-{args.channel}" + ("-integrity" if args.integrity else "")
    write_report(out, stem, report.to_json(), text)
    print(text, end="")
    for name in report.differs:
        cell = report.cells[name]
        said = f"ppaux faults: {name}: {cell.outcome}, expected {cell.expected}"
        if cell.model is not None and cell.model.outcome != cell.outcome:
            said += f"; ppaux's model (gloo): {cell.model.outcome}"
        print(said, file=sys.stderr)
    return 0 if report.verdict == "pass" else 1
