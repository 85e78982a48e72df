"""``python -m fuzz`` run as a child process from the checkout's root, in an environment without
coverage's; shared by tests/test_fuzz.py and tests/test_survival.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def env() -> dict:
    # pytest-cov would measure every fuzz round too (3x slower); the rounds cover nothing new.
    return {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE_", "COVERAGE_"))}


def fuzz(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env(),
    )


def round_events(report: Path) -> str:
    """Everything the rounds of a fuzz run reporting to ``report`` have written as events so far."""
    return "".join(p.read_text() for p in sorted((report / "rounds").glob("*.events.jsonl")))


def examples_ran(report: Path) -> bool:
    """Whether a round of the fuzz run reporting to ``report`` has counted an example."""
    return any(
        e["kind"] == "progress" and e["examples"] > 0
        for line in round_events(report).splitlines()
        if line.endswith("}")
        for e in [json.loads(line)]
    )


def fuzz_run_held(monkeypatch, ready, *args: str) -> int:
    """``ppaux fuzz run ARGS`` in this process (its rounds are subprocesses, without coverage) on a
    fake clock that stands still while ``ready(now)`` is false: what the test is about has happened
    at the fake time the test says, however busy the machine is (tests.support.held_until, with its
    safety net)."""
    from ppaux.cli.main import build_parser
    from ppaux.fuzz.command import cmd_run
    from tests.support import FakeClock, held_until

    for name in list(os.environ):
        if name.startswith(("COV_CORE_", "COVERAGE_")):
            monkeypatch.delenv(name)
    args_ = build_parser().parse_args(["fuzz", "run", *args])
    clock = FakeClock(start=0.0)
    clock.on_sleep = held_until(lambda: ready(clock.now))
    return cmd_run(args_, clock=clock)
