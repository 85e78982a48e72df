"""``ppaux faults``: print the fault matrix (:mod:`ppaux.relay.matrix`) and write it as Markdown and JSON."""

from __future__ import annotations

import argparse
import sys

from ppaux.cli.usage import UsageError
from ppaux.relay.hop import CHANNELS
from ppaux.relay.matrix import EXPECTED, markdown, matrix
from ppaux.report import write_report
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


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    report = report_directory(args.report, "faults")
    expected = EXPECTED[(args.channel, args.integrity)]
    cells = matrix(channel=args.channel, integrity=args.integrity, timeout=args.timeout)
    # Over SGLang's own code, ppaux's model of it (on gloo) stands beside it, fault by fault.
    model = matrix(channel="gloo", integrity=args.integrity, timeout=args.timeout) if args.channel == "sglang" else None
    text = markdown(cells, channel=args.channel, integrity=args.integrity, expected=expected, model=model)
    stem = f"faults-{args.channel}" + ("-integrity" if args.integrity else "")
    data = {
        "channel": args.channel,
        "integrity": args.integrity,
        "cells": {
            n: {**v.as_dict(), "expected": expected[n], **({"model": model[n].as_dict()} if model else {})}
            for n, v in cells.items()
        },
    }
    write_report(report, stem, data, text)
    print(text, end="")
    differs = [
        n for n, v in cells.items() if v.outcome != expected[n] or (model is not None and model[n].outcome != v.outcome)
    ]
    for n in differs:
        said = f"ppaux faults: {n}: {cells[n].outcome}, expected {expected[n]}"
        if model is not None and model[n].outcome != cells[n].outcome:
            said += f"; ppaux's model (gloo): {model[n].outcome}"
        print(said, file=sys.stderr)
    return 1 if differs else 0
