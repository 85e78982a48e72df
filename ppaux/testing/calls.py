"""The calls a finding names, and the guard of ppaux's tests: the isolation layer's hangs and crashes
(``BaseException`` subclasses that name the call they were guarded under) as pytest failures, which Hypothesis
shrinks and an implementation's ``except Exception`` cannot swallow, named by the contract's calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ppaux import isolation
from ppaux.isolation import Guard
from ppaux.isolation.status import Frame

# The calls of the contract and of an observer plugin a finding names, by function name.
KNOWN_CALLS = {
    "add_auxiliary_output_to_pp_tensors": "add",
    "pop_auxiliary_output_from_pp_tensors": "pop",
    "to_pp_tensors": "to_pp_tensors",
    "from_pp_tensors": "from_pp_tensors",
    "copy_to_host": "copy_to_host",
    "consume": "consume",
}

_Failed: Any = pytest.fail.Exception  # pytest's Failed, which pytest does not export as a type


def call_name(frames: Sequence[Frame], default: str) -> str:
    """The innermost contract or observer call among ``frames``; ``default`` when none is."""
    for frame in frames:
        if frame.function in KNOWN_CALLS:
            return KNOWN_CALLS[frame.function]
    return default


class Hang(isolation.Hang, _Failed):  # type: ignore[misc]
    """A hang in a test of ppaux's (:class:`ppaux.isolation.Hang`): a pytest failure."""


class Crash(isolation.Crash, _Failed):  # type: ignore[misc]
    """A crash in a test of ppaux's (:class:`ppaux.isolation.Crash`): a pytest failure."""


class SuiteGuard(Guard):
    """The guard of ppaux's tests (the suite's, the kit's): its findings are pytest failures naming the
    contract's and the observer's calls."""

    hang = Hang
    crash = Crash

    def name(self, frames: list[Frame], call: str) -> str:
        return call_name(frames, call)
