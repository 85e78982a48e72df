"""The public fault strategies: what they draw and how they validate their arguments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis.errors import InvalidArgument

from ppaux.relay.faults import FAULTS, BitFlip, Delay, Fault
from ppaux.relay.strategies import FaultSchedule, fault_schedules, faults

pytestmark = pytest.mark.wire


@given(f=faults(keys=["next_token_ids"], include_none=True))
def test_faults_draw_named_faults_aimed_at_the_given_keys(f):
    assert isinstance(f, Fault) and (type(f) is Fault or FAULTS[f.name] is type(f))
    assert f.key in (None, "next_token_ids")
    if isinstance(f, BitFlip):
        assert 0 <= f.bit < 64
    if isinstance(f, Delay):
        assert f.seconds <= 0.02


@given(s=fault_schedules(steps=3))
def test_schedules_place_the_fault_at_a_step_of_the_run(s):
    assert isinstance(s, FaultSchedule) and s.steps == 3
    assert 0 <= s.step < (2 if s.fault.name == "reorder" else 3)


@given(s=fault_schedules(steps=1, names=["reorder", "drop_key"]))
def test_one_step_schedules_never_reorder(s):
    assert s.fault.name == "drop_key" and s.step == 0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: faults(names=["nope"]), "names=('nope',) must be a non-empty selection of " + repr(tuple(FAULTS))),
        (lambda: faults(names=[]), "names=() must be a non-empty selection of " + repr(tuple(FAULTS))),
        (lambda: faults(keys=[]), "keys must be None or a non-empty sequence of keys to aim at"),
        (lambda: faults(include_none=1), "include_none=1 must be of type bool, not int"),
        (lambda: fault_schedules(steps=0), "steps=0 must be between 1 and 16"),
        (lambda: fault_schedules(steps=1, names=["reorder"]), "reorder needs steps >= 2"),
    ],
)
def test_arguments_are_validated_up_front(call, message):
    with pytest.raises(InvalidArgument) as info:
        call()
    assert str(info.value) == message
