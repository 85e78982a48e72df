"""``python -m fuzz`` run as a child process from the checkout's root, in an environment without
coverage's; shared by tests/test_fuzz.py and tests/test_survival.py."""

from __future__ import annotations

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
