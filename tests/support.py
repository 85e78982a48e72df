"""Helpers shared by ppaux's own tests: the CLI's help and defaults, a recording channel."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import pytest
import torch

from ppaux.cli.main import build_parser, main
from ppaux.conformance.support import raises_documented
from ppaux.testing.impl import reference

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomllib is 3.11+; the test extra brings tomli, its origin, on 3.10
    import tomli as tomllib

__all__ = ["tomllib"]


def cli_help(capsys: Any, *argv: str) -> str:
    """``ppaux ARGV --help`` as one line (argparse wraps to the terminal width); it must exit 0."""
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    out, err = capsys.readouterr()
    assert (info.value.code, err) == (0, "")
    return " ".join(out.split())


def cli_defaults(command: str) -> dict:
    """The options ``ppaux COMMAND`` runs with when given none."""
    return {k: v for k, v in vars(build_parser().parse_args([command])).items() if not k.startswith("_")}


class SentMessage(NamedTuple):
    group: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    device: str
    values: list | None  # None for a meta tensor, which has none


class SentLog:
    """A channel that keeps every message it is asked to send and moves no data, so that meta
    tensors can stand in for device tensors on a CPU-only machine."""

    def __init__(self) -> None:
        self.messages: list[SentMessage] = []

    def send(self, tensor: torch.Tensor, group: str) -> None:
        self.messages.append(
            SentMessage(
                group,
                tensor.dtype,
                tuple(tensor.shape),
                tensor.device.type,
                None if tensor.is_meta else tensor.tolist(),
            )
        )

    def tensors(self) -> list[SentMessage]:
        """The tensor messages: every one after the metadata's size and bytes."""
        return self.messages[2:]


class HalfGather:
    """Rank 1 of a two-rank all-gather group, without peers: sends carry each tensor's second half."""

    size, rank = 2, 1


class DoneWork:
    """What an asynchronous send returns once it has completed."""

    def wait(self) -> bool:
        return True


# The catalog's errors as ppaux's reference raises them (its subclass and code included).
REFERENCE = reference()


def raises_catalog(code: str, *name: Any) -> Any:
    """``pytest.raises`` for the catalog error ``code`` (with its name, if it takes one), as the reference raises it."""
    return raises_documented(REFERENCE, code, *name)


class FakeClock:
    """A :class:`ppaux.isolation.clock.Clock` whose time moves only when slept or advanced: a loop's
    decisions tested without real seconds. ``on_sleep(seconds)``, if given, runs at each sleep
    (scripted events: a child ends, a signal arrives) and returns the seconds to let pass (``None``:
    as asked): a test holds time still until the processes it waits for reached a step."""

    def __init__(self, start: float = 1000.0, on_sleep: Any = None) -> None:
        self.now, self.on_sleep, self.sleeps = start, on_sleep, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        passed = None if self.on_sleep is None else self.on_sleep(seconds)
        self.now += seconds if passed is None else passed

    def advance(self, seconds: float) -> None:
        self.now += seconds


def held_until(ready: Any, limit: float = 60.0) -> Any:
    """An ``on_sleep`` for :class:`FakeClock` over real processes: the fake time moves only while
    ``ready()`` holds (the processes reached the step the test is about); a sleep that finds it false
    waits a moment of real time and lets none pass, so a busy machine slows the test instead of
    changing its verdict. After ``limit`` real seconds (scaled by $PPAUX_TIMEOUT_FACTOR), time moves
    regardless: a safety net so that the run ends, and the test's assertions say what was missing."""
    import time

    from ppaux.isolation import safety_limit

    give_up = time.monotonic() + safety_limit(limit)

    def on_sleep(seconds: float) -> float:
        if ready() or time.monotonic() > give_up:
            return seconds
        time.sleep(min(seconds, 0.01))
        return 0.0

    return on_sleep


def build_report(rows: list, *, impl: str, profile: str, marks: str, timeout: float = 10.0, command: str = "") -> dict:
    """The conformance report of the test rows ``rows`` (as the suite's run records them), as JSON."""
    from ppaux.report import ConformanceReport, TestOutcome

    outcomes = [TestOutcome.from_json(r) for r in rows]
    return ConformanceReport.build(
        outcomes, implementation=impl, profile=profile, marks=marks, timeout_s=timeout, command=command
    ).to_json()


def render_markdown(report: dict) -> str:
    """conformance.md of the conformance report ``report`` (JSON, read back as ``ppaux check`` would)."""
    from ppaux.report import ConformanceReport
    from ppaux.report.render import conformance_markdown

    return conformance_markdown(ConformanceReport.from_json(report))
