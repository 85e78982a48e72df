"""The isolation layer's findings are its own BaseExceptions, out of reach of an implementation's
``except Exception``; the testing layer's guard turns them into pytest failures (which Hypothesis
shrinks) that name the contract's and the observer's calls."""

from __future__ import annotations

import ctypes
import os
import signal

import pytest

from ppaux import isolation
from ppaux.isolation import Guard
from ppaux.isolation.status import Frame
from ppaux.testing.calls import Crash, Hang, SuiteGuard, call_name

FRAMES = [
    Frame("/plugin/obs.py", 7, "helper"),
    Frame("/plugin/obs.py", 3, "from_pp_tensors"),
    Frame("/x/transport.py", 90, "pop_auxiliary_output_from_pp_tensors"),
]


def test_the_innermost_call_of_the_contract_or_of_a_plugin_names_the_finding():
    assert call_name(FRAMES, "pop") == "from_pp_tensors"
    assert call_name(FRAMES[2:], "add") == "pop"
    assert call_name(FRAMES[:1], "add") == "add"


def swallowing(fn):
    """An implementation that catches every Exception around its work."""

    def add_auxiliary_output_to_pp_tensors():
        try:
            fn()
        except Exception:
            return "swallowed"

    return add_auxiliary_output_to_pp_tensors


def loops():
    while True:
        signal.pause()  # hung until the guard's timer strikes, leaving the cores to the tests beside it


def test_an_isolation_hang_is_no_exception_and_names_the_call_as_guarded():
    with pytest.raises(isolation.Hang) as info:
        Guard(0.2).call("step", swallowing(loops))
    assert not isinstance(info.value, Exception) and type(info.value) is isolation.Hang
    assert str(info.value).startswith("step did not return within 0.2 s (the per-call time limit)\nstuck at")


def test_the_tests_guard_raises_a_pytest_failure_naming_the_contract_call():
    with pytest.raises(Hang) as info:
        SuiteGuard(0.2).call("step", swallowing(loops))
    assert isinstance(info.value, pytest.fail.Exception) and isinstance(info.value, isolation.Hang)
    assert info.value.msg.startswith("add did not return within 0.2 s (the per-call time limit)\nstuck at")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="an isolated call runs in a forked child")
def test_the_tests_guard_raises_an_isolated_crash_as_a_pytest_failure():
    guard = SuiteGuard(5)
    guard.isolated = True
    with pytest.raises(Crash) as info:
        guard.call("step", swallowing(lambda: ctypes.string_at(0)))
    assert isinstance(info.value, pytest.fail.Exception) and isinstance(info.value, isolation.Crash)
    # faulthandler's stack shows where: in the contract's add.
    assert info.value.msg.partition("\n")[0] == "add killed the process with SIGSEGV (signal 11)"
