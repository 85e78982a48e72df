"""Properties of pop_auxiliary_output_from_pp_tensors, one per contract clause."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import strategies as st
from ppaux_strategies import (
    NotPPObserver,
    ObserverFailure,
    RecordingObserver,
    aux_names,
    observers,
    tensors,
    transport_dicts,
)

from ppaux.conformance.support import (
    Oracle,
    assert_all_or_nothing,
    assert_documented,
    assert_same_dict,
    assert_same_objects,
    pop_cases,
    raised,
    raises_documented,
    snapshot,
    transports,
    verdict,
)
from ppaux.testing.impl import Implementation
from ppaux.testing.profiles import given

pytestmark = pytest.mark.contract


@pytest.mark.clause("pop.1")
@given(data=st.data(), tensor=tensors())
def test_name_is_key_with_prefix_removed_once(
    ppaux_impl: Implementation, data: st.DataObject, tensor: torch.Tensor
) -> None:
    """pop.1: an aux item's name is its key with the prefix removed once; a name may itself contain the prefix."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    name = data.draw(aux_names(prefix=t.prefix), label="name")
    for n in (name, t.prefix + name):
        d[t.prefix + n] = tensor
    obs = RecordingObserver()
    t.pop(d, obs)
    assert_same_objects(obs.snapshots[0], {name: tensor, t.prefix + name: tensor})


@pytest.mark.clause("pop.2")
@given(data=st.data(), obs=observers())
def test_no_aux_items_returns_none_without_calling_observer(
    ppaux_impl: Implementation, data: st.DataObject, obs: object
) -> None:
    """pop.2: without aux items pop returns None, leaves the dict untouched and never calls the observer
    (any observer)."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    snap = snapshot(d)
    result = t.pop(d, obs)
    assert result is None, f"expected pop without aux items to return None, got {result!r}"
    assert_same_dict(d, snap)
    if isinstance(obs, RecordingObserver):
        assert obs.calls == [], f"expected no call of from_pp_tensors(), got {len(obs.calls)}"


def _check_precedence(t: Implementation, d: dict[Any, Any], obs: object) -> None:
    expected = Oracle(t.prefix).pop_error(d, obs)
    if expected is None:
        return
    snap = snapshot(d)
    error = raised(Exception, f"pop with {obs!r} to raise {verdict(expected)}", t.pop, d, obs)
    assert_documented(t, error, *expected)
    assert_same_dict(d, snap)
    if isinstance(obs, RecordingObserver):
        assert obs.calls == [], f"expected no call of from_pp_tensors() before {expected[0]}, got {len(obs.calls)}"


@pytest.mark.clause("pop.3")
@given(data=st.data())
def test_observer_checks_precede_value_checks(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """pop.3: with aux items, observer None is P1, else an observer without PP support is P2,
    else a non-tensor aux value is P3."""
    _check_precedence(*data.draw(pop_cases(ppaux_impl), label="case"))


@pytest.mark.clause("pop.3")
@pytest.mark.parametrize("obs", [None, NotPPObserver(), RecordingObserver()], ids=["P1", "P2", "P3"])
def test_observer_checks_precede_value_checks_on_a_non_tensor(ppaux_impl: Implementation, obs: object) -> None:
    """pop.3: a non-tensor aux value is P3 only once the observer is there and supports PP transport."""
    _check_precedence(ppaux_impl, {ppaux_impl.prefix + "a": [1]}, obs)


@pytest.mark.clause("pop.4")
@given(data=st.data(), mode=st.sampled_from(["rebuild", "return_none", "raise"]))
def test_observer_called_once_with_a_new_dict_of_the_same_objects(
    ppaux_impl: Implementation, data: st.DataObject, mode: str
) -> None:
    """pop.4: from_pp_tensors is called once with a new {name: value} dict of all aux items, values the very objects."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    expected = Oracle(t.prefix).aux_items(d)
    obs = RecordingObserver(mode)
    try:
        t.pop(d, obs)
    except (ObserverFailure, RuntimeError):
        pass
    assert len(obs.calls) == 1, f"expected from_pp_tensors() called once, got {len(obs.calls)} calls"
    assert obs.calls[0] is not d, "expected from_pp_tensors() handed a new dict, got the PP dict itself"
    names = [n for n, _ in expected]
    assert list(obs.snapshots[0]) == names, (
        f"expected from_pp_tensors() handed the names {names!r}, got {list(obs.snapshots[0])!r}"
    )
    assert all(obs.snapshots[0][n] is v for n, v in expected), (
        f"expected from_pp_tensors() handed the very value objects, got {obs.snapshots[0]!r} for {dict(expected)!r}"
    )


@pytest.mark.clause("pop.4")
@given(data=st.data())
def test_observer_error_propagates_unchanged(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """pop.4: an exception raised by from_pp_tensors propagates unchanged."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    obs = RecordingObserver("raise")
    error = raised(ObserverFailure, "the ObserverFailure of from_pp_tensors() to propagate", t.pop, d, obs)
    assert error is obs.error, f"expected the very ObserverFailure from_pp_tensors() raised, got {error!r}"


@pytest.mark.clause("pop.5")
@given(data=st.data())
def test_observer_returning_none_is_p4(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """pop.5: an observer that returns None raises P4."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    with raises_documented(t, "P4"):
        t.pop(d, RecordingObserver("return_none"))


@pytest.mark.clause("pop.6")
@given(data=st.data())
def test_failed_pop_leaves_dict_exactly_as_before(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """pop.6: when pop raises, for any reason (P1-P4 or the observer's own error), the dict is exactly as before."""
    t, d, obs = data.draw(pop_cases(ppaux_impl), label="case")
    assert_all_or_nothing(t.pop, d, obs)


@pytest.mark.clause("pop.7")
@given(data=st.data())
def test_success_returns_observer_object_and_removes_exactly_aux_keys(
    ppaux_impl: Implementation, data: st.DataObject
) -> None:
    """pop.7: success returns the observer's own object; the dict loses exactly the aux keys,
    others keep value and position."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    keep = [(k, v) for k, v in d.items() if not (isinstance(k, str) and k.startswith(t.prefix))]
    obs = RecordingObserver()
    result = t.pop(d, obs)
    assert result is obs.returned[0], (
        f"expected pop to return the observer's own object {obs.returned[0]!r}, got {result!r}"
    )
    assert_same_dict(d, keep)
