"""Properties of add_auxiliary_output_to_pp_tensors, one per contract clause."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ppaux_strategies import (
    NotPPOutput,
    ObserverFailure,
    PPOutput,
    RaisingPPOutput,
    aux_outputs,
    aux_payloads,
    transport_dicts,
)
from ppaux.pytest_plugin import current_implementation
from tests.support import Oracle, add_cases, assert_documented, assert_same_dict, raises_documented, snapshot, transports


pytestmark = pytest.mark.contract


@pytest.mark.clause("add.1")
@given(t=transports(), data=st.data())
def test_none_output_leaves_dict_untouched(t, data):
    """add.1: a None output returns and leaves the dict untouched."""
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    snap = snapshot(d)
    assert t.add(d, None) is None
    assert_same_dict(d, snap)


@pytest.mark.clause("add.2")
@given(t=transports(), data=st.data())
def test_output_without_pp_support_is_a1(t, data):
    """add.2: an output that does not support PP transport raises A1 and writes nothing."""
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    snap = snapshot(d)
    with raises_documented("A1"):
        t.add(d, NotPPOutput())
    assert_same_dict(d, snap)


@pytest.mark.clause("add.3")
@given(t=transports(), data=st.data())
def test_to_pp_tensors_called_once_and_its_error_propagates(t, data):
    """add.3: to_pp_tensors is called exactly once; what it raises propagates unchanged."""
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    out = data.draw(st.one_of(aux_outputs(prefix=t.prefix), st.builds(RaisingPPOutput)), label="output")
    if isinstance(out, RaisingPPOutput):
        snap = snapshot(d)
        with pytest.raises(ObserverFailure) as info:
            t.add(d, out)
        assert info.value is out.error
        assert_same_dict(d, snap)
    else:
        t.add(d, out)
    assert out.calls == 1


@pytest.mark.clause("add.4")
@given(t=transports(), data=st.data(), payload=st.sampled_from([{}, None, (), 0, ""]))
def test_falsy_payload_is_a2(t, data, payload):
    """add.4: a falsy payload (empty mapping, None) raises A2."""
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    snap = snapshot(d)
    with raises_documented("A2"):
        t.add(d, PPOutput(payload))
    assert_same_dict(d, snap)


@pytest.mark.clause("add.5")
@given(case=add_cases(valid=False))
@example(case=(None, {}, PPOutput({"ok": torch.zeros(1), 7: torch.zeros(1), "bad": 1})))
@example(case=(None, {}, PPOutput({"bad": [0.2], "": torch.zeros(1)})))
@example(case=(None, {"__sampling_observer_output__.scores": torch.zeros(1)}, PPOutput({"ok": torch.zeros(1), "scores": torch.ones(1)})))
def test_first_failing_item_decides_the_error(case):
    """add.5: items are checked in order, name (A3) before value (A4) before collision (A5); the first failing item decides."""
    t, d, out = case
    t = t or current_implementation()
    if isinstance(out, RaisingPPOutput):
        with pytest.raises(ObserverFailure):
            t.add(d, out)
        return
    expected = Oracle(t.prefix).add_error(d, out)
    if expected is None:
        t.add(d, out)
        return
    with pytest.raises(Exception) as info:
        t.add(d, out)
    assert_documented(info.value, *expected)


@pytest.mark.clause("add.7")
@given(t=transports(), data=st.data())
def test_success_adds_one_key_per_item_bound_to_the_same_tensor(t, data):
    """add.7: success adds exactly prefix+name per item bound to the very tensor; earlier keys keep value and position."""
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    payload = data.draw(aux_payloads(prefix=t.prefix), label="payload")
    snap = snapshot(d)
    t.add(d, PPOutput(payload))
    assert list(d)[: len(snap)] == [k for k, _ in snap]
    assert all(d[k] is v for k, v in snap)
    added = list(d.items())[len(snap):]
    assert sorted(k for k, _ in added) == sorted(t.prefix + n for n in payload)
    for name, tensor in payload.items():
        assert d[t.prefix + name] is tensor
