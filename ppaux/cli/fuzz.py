"""``ppaux fuzz run|replay|report``: the nightly fuzz job from an install (:mod:`ppaux.fuzz`)."""

from __future__ import annotations

import argparse

from ppaux.fuzz import add_arguments

__all__ = ["add_arguments", "run"]


def run(args: argparse.Namespace) -> int:
    from ppaux.fuzz import run as fuzz

    return fuzz(args)
