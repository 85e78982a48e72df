"""The public fault strategies: what they draw and how they validate their arguments."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, NoSuchExample

from ppaux.relay.faults import FAULTS, BitFlip, Delay, Fault
from ppaux.relay.strategies import FaultSchedule, fault_schedules, faults

pytestmark = pytest.mark.wire


# The strategies are built inside each test (data.draw), not at import: mutation testing can then
# tell which tests build them.


@given(data=st.data())
def test_faults_draw_named_faults_aimed_at_the_given_keys(data):
    f = data.draw(faults(keys=["next_token_ids"], include_none=True))
    assert isinstance(f, Fault) and (type(f) is Fault or FAULTS[f.name] is type(f))
    assert f.key in (None, "next_token_ids")
    if isinstance(f, BitFlip):
        assert 0 <= f.bit < 64
    if isinstance(f, Delay):
        assert f.seconds <= 0.02


@given(data=st.data())
def test_schedules_place_the_fault_at_a_step_of_the_run(data):
    s = data.draw(fault_schedules(steps=3))
    assert isinstance(s, FaultSchedule) and s.steps == 3
    assert 0 <= s.step < (2 if s.fault.name == "reorder" else 3)


@given(data=st.data())
def test_one_step_schedules_never_reorder(data):
    s = data.draw(fault_schedules(steps=1, names=["reorder", "drop_key"]))
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


QUICK = settings(database=None, max_examples=500, derandomize=True)


def drawn(strategy, condition):
    """An example the strategy draws that meets ``condition`` (found, or the test fails)."""
    return find(strategy, condition, settings=QUICK)


def never(strategy, condition):
    with pytest.raises(NoSuchExample):
        find(strategy, condition, settings=QUICK)


def test_every_fault_kind_is_drawn_and_none_only_when_asked():
    for name in FAULTS:
        assert drawn(faults(), lambda f, name=name: f.name == name).name == name
        # The no-fault baseline joins the kinds; it does not replace them.
        assert drawn(faults(include_none=True), lambda f, name=name: f.name == name).name == name
    assert drawn(faults(include_none=True), lambda f: type(f) is Fault) == Fault()
    never(faults(), lambda f: type(f) is Fault)
    assert drawn(fault_schedules(steps=4), lambda s: s.fault.name == "reorder" and s.step == 2).step == 2
    # Two steps unless asked: the fewest that let a fault be reordered.
    assert drawn(fault_schedules(), lambda s: True).steps == 2


@pytest.mark.parametrize("name", ["bit_flip", "delay", "drop_key"])
def test_every_kind_aims_at_the_given_keys_or_at_the_first_aux_key(name):
    assert drawn(faults(names=[name], keys=["k", "j"]), lambda f: f.key == "j").key == "j"
    assert drawn(faults(names=[name], keys=["k"]), lambda f: f.key is None).key is None
    never(faults(names=[name]), lambda f: f.key is not None)


def test_a_bit_flip_strikes_one_of_the_64_bits_of_a_word_and_shrinks_to_bit_0():
    assert drawn(faults(names=["bit_flip"]), lambda f: True).bit == 0
    assert drawn(faults(names=["bit_flip"]), lambda f: f.bit == 63).bit == 63
    never(faults(names=["bit_flip"]), lambda f: not 0 <= f.bit < 64)


def test_a_delay_is_at_most_20_ms_and_shrinks_to_none():
    assert drawn(faults(names=["delay"]), lambda f: True).seconds == 0.0
    assert drawn(faults(names=["delay"]), lambda f: f.seconds == 0.02).seconds == 0.02
    never(faults(names=["delay"]), lambda f: f.seconds > 0.02)
