"""``ppaux wire-diff``: SGLang's own send_tensor_dict / recv_tensor_dict against ppaux's model of
them, on drawn PP dicts over real gloo ranks (pp 2 and 3, attention-TP 1 and 2)."""

from __future__ import annotations

import argparse
import sys

from hypothesis import settings as Settings

import ppaux.relay.differential as differential
from ppaux.cli.usage import UsageError
from ppaux.relay.sglang import DEFAULT_VERSION, RELEASES, ReleaseChanged, ReleaseUnavailable
from ppaux.testing.profiles import TUNINGS, tuned


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sglang-version",
        default=DEFAULT_VERSION,
        metavar="V",
        help=f"the SGLang release whose wire code to load (downloaded once, cached; default {DEFAULT_VERSION}); "
        f"'all': each of {RELEASES[0]}-{RELEASES[-1]}, as a table",
    )
    parser.add_argument("--profile", default="ci", help=f"Hypothesis profile: {', '.join(TUNINGS)} (default: ci)")


def run(args: argparse.Namespace) -> int:
    if args.profile not in TUNINGS:
        raise UsageError(f"unknown profile {args.profile!r}; choose from {', '.join(TUNINGS)}")
    settings = Settings(tuned(args.profile), deadline=None)
    if args.sglang_version == "all":
        return _matrix(settings, args.profile)
    try:
        differential.check(args.sglang_version, settings)
    except (ReleaseUnavailable, ReleaseChanged) as exc:
        raise UsageError(str(exc)) from None
    except AssertionError as exc:
        print("\n".join([str(exc), *getattr(exc, "__notes__", [])]), file=sys.stderr)
        return 1
    print(
        f"ppaux wire-diff: sglang=={args.sglang_version} and ppaux's model agree on every drawn PP dict "
        f"(pp x attention-TP: {', '.join(f'{p}x{t}' for p, t in differential.CONFIGS)}; profile {args.profile})"
    )
    return 0


def _matrix(settings: Settings, profile: str) -> int:
    """Every release the PP transport exists in: does ppaux's model match its wire code?"""
    rows = ["| SGLang release | ppaux's model | first difference |", "| --- | --- | --- |"]
    matches = 0
    for version in RELEASES:
        try:
            differential.check(version, settings)
        except (ReleaseUnavailable, ReleaseChanged) as exc:
            rows.append(f"| {version} | not checked | {exc} |")
        except AssertionError as exc:
            rows.append(f"| {version} | differs | {str(exc).splitlines()[0]} |")
        else:
            matches += 1
            rows.append(f"| {version} | matches | |")
    print("\n".join(rows))
    print(f"\nppaux wire-diff: the model matches {matches} of {len(RELEASES)} releases (profile {profile})")
    return 0 if matches == len(RELEASES) else 1
