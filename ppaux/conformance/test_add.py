"""Properties of add_auxiliary_output_to_pp_tensors, one per contract clause."""

from __future__ import annotations

from typing import Any

import pytest
import torch
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

from ppaux.conformance.support import (
    Oracle,
    add_cases,
    assert_documented,
    assert_same_dict,
    raised,
    raises_documented,
    snapshot,
    transports,
    verdict,
)
from ppaux.testing.impl import Implementation
from ppaux.testing.profiles import given

pytestmark = pytest.mark.contract


@pytest.mark.clause("add.1")
@given(data=st.data())
def test_none_output_leaves_dict_untouched(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """add.1: a None output returns and leaves the dict untouched."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    snap = snapshot(d)
    result = t.add(d, None)
    assert result is None, f"expected add(d, None) to return None, got {result!r}"
    assert_same_dict(d, snap)


@pytest.mark.clause("add.2")
@given(data=st.data())
def test_output_without_pp_support_is_a1(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """add.2: an output that does not support PP transport raises A1 and writes nothing."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    snap = snapshot(d)
    with raises_documented(t, "A1"):
        t.add(d, NotPPOutput())
    assert_same_dict(d, snap)


@pytest.mark.clause("add.3")
@given(data=st.data())
def test_to_pp_tensors_called_once_and_its_error_propagates(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """add.3: to_pp_tensors is called exactly once; what it raises propagates unchanged."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    out = data.draw(st.one_of(aux_outputs(prefix=t.prefix), st.builds(RaisingPPOutput)), label="output")
    if isinstance(out, RaisingPPOutput):
        snap = snapshot(d)
        error = raised(ObserverFailure, "the ObserverFailure of to_pp_tensors() to propagate", t.add, d, out)
        assert error is out.error, f"expected the very ObserverFailure to_pp_tensors() raised, got {error!r}"
        assert_same_dict(d, snap)
    else:
        t.add(d, out)
    assert out.calls == 1, f"expected to_pp_tensors() called once, got {out.calls} calls"


@pytest.mark.clause("add.4")
@given(data=st.data(), payload=st.sampled_from([{}, None, (), 0, ""]))
def test_falsy_payload_is_a2(ppaux_impl: Implementation, data: st.DataObject, payload: object) -> None:
    """add.4: a falsy payload (empty mapping, None) raises A2."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    snap = snapshot(d)
    with raises_documented(t, "A2"):
        t.add(d, PPOutput(payload))
    assert_same_dict(d, snap)


def _check_first_failing_item(t: Implementation, d: dict[Any, Any], out: object) -> None:
    if isinstance(out, RaisingPPOutput):
        raised(ObserverFailure, f"add({out!r}) to propagate the ObserverFailure of to_pp_tensors()", t.add, d, out)
        return
    expected = Oracle(t.prefix).add_error(d, out)
    if expected is None:
        t.add(d, out)
        return
    error = raised(Exception, f"add({out!r}) to raise {verdict(expected)}", t.add, d, out)
    assert_documented(t, error, *expected)


@pytest.mark.clause("add.5")
@given(data=st.data())
def test_first_failing_item_decides_the_error(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """add.5: items are checked in order, name (A3) before value (A4) before collision (A5);
    the first failing item decides."""
    _check_first_failing_item(*data.draw(add_cases(ppaux_impl, valid=False), label="case"))


@pytest.mark.clause("add.5")
@pytest.mark.parametrize(
    "d, payload",
    [
        ({}, {"ok": torch.zeros(1), 7: torch.zeros(1), "bad": 1}),
        ({}, {"bad": [0.2], "": torch.zeros(1)}),
        ({"scores": torch.zeros(1)}, {"ok": torch.zeros(1), "scores": torch.ones(1)}),
    ],
    ids=["A3 before a later A4", "A4 before a later A3", "A5 after a valid item"],
)
def test_first_failing_item_decides_the_error_in_known_cases(
    ppaux_impl: Implementation, d: dict[str, torch.Tensor], payload: dict[object, object]
) -> None:
    """add.5: the first failing item decides, whatever a later item does wrong."""
    d = {(ppaux_impl.prefix + k if k == "scores" else k): v for k, v in d.items()}
    _check_first_failing_item(ppaux_impl, d, PPOutput(payload))


@pytest.mark.clause("add.7")
@given(data=st.data())
def test_success_adds_one_key_per_item_bound_to_the_same_tensor(
    ppaux_impl: Implementation, data: st.DataObject
) -> None:
    """add.7: success adds exactly prefix+name per item bound to the very tensor;
    earlier keys keep value and position."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    payload = data.draw(aux_payloads(prefix=t.prefix), label="payload")
    snap = snapshot(d)
    t.add(d, PPOutput(payload))
    earlier = [k for k, _ in snap]
    assert list(d)[: len(snap)] == earlier, f"expected the earlier keys {earlier!r} first, got {list(d)!r}"
    assert all(d[k] is v for k, v in snap), (
        f"expected every earlier key to keep its value object, got {list(d.items())!r}"
    )
    added = sorted(k for k, _ in list(d.items())[len(snap) :])
    assert added == sorted(t.prefix + n for n in payload), (
        f"expected the added keys {sorted(t.prefix + n for n in payload)!r}, got {added!r}"
    )
    for name, tensor in payload.items():
        assert d[t.prefix + name] is tensor, (
            f"expected {t.prefix + name!r} bound to the payload's own tensor, got another object"
        )
