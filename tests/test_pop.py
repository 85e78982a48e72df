"""Properties of pop_auxiliary_output_from_pp_tensors, one per contract clause."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ppaux.pytest_plugin import current_implementation
from ppaux_strategies import NotPPObserver, ObserverFailure, RecordingObserver, aux_names, observers, tensors, transport_dicts
from tests.support import assert_same_objects, assert_all_or_nothing, Oracle, assert_documented, assert_same_dict, pop_cases, raises_documented, snapshot, transports

pytestmark = pytest.mark.contract

SGLANG_AUX = "__sampling_observer_output__.a"


@pytest.mark.clause("pop.1")
@given(t=transports(), data=st.data(), tensor=tensors())
def test_name_is_key_with_prefix_removed_once(t, data, tensor):
    """pop.1: an aux item's name is its key with the prefix removed once; a name may itself contain the prefix."""
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    name = data.draw(aux_names(prefix=t.prefix), label="name")
    for n in (name, t.prefix + name):
        d[t.prefix + n] = tensor
    obs = RecordingObserver()
    t.pop(d, obs)
    assert_same_objects(obs.snapshots[0], {name: tensor, t.prefix + name: tensor})


@pytest.mark.clause("pop.2")
@given(t=transports(), data=st.data(), obs=observers())
def test_no_aux_items_returns_none_without_calling_observer(t, data, obs):
    """pop.2: without aux items pop returns None, leaves the dict untouched and never calls the observer (any observer)."""
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    snap = snapshot(d)
    assert t.pop(d, obs) is None
    assert_same_dict(d, snap)
    if isinstance(obs, RecordingObserver):
        assert obs.calls == []


@pytest.mark.clause("pop.3")
@given(case=pop_cases())
@example(case=(None, {SGLANG_AUX: [1]}, None))
@example(case=(None, {SGLANG_AUX: [1]}, NotPPObserver()))
@example(case=(None, {SGLANG_AUX: [1]}, RecordingObserver()))
def test_observer_checks_precede_value_checks(case):
    """pop.3: with aux items, observer None is P1, else an observer without PP support is P2, else a non-tensor aux value is P3."""
    t, d, obs = case
    t = t or current_implementation()
    expected = Oracle(t.prefix).pop_error(d, obs)
    if expected is None:
        return
    snap = snapshot(d)
    with pytest.raises(Exception) as info:
        t.pop(d, obs)
    assert_documented(info.value, *expected)
    assert_same_dict(d, snap)
    if isinstance(obs, RecordingObserver):
        assert obs.calls == []


@pytest.mark.clause("pop.4")
@given(t=transports(), data=st.data(), mode=st.sampled_from(["rebuild", "return_none", "raise"]))
def test_observer_called_once_with_a_new_dict_of_the_same_objects(t, data, mode):
    """pop.4: from_pp_tensors is called once with a new {name: value} dict of all aux items, values the very objects."""
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    expected = Oracle(t.prefix).aux_items(d)
    obs = RecordingObserver(mode)
    try:
        t.pop(d, obs)
    except (ObserverFailure, RuntimeError):
        pass
    assert len(obs.calls) == 1
    assert obs.calls[0] is not d
    assert list(obs.snapshots[0]) == [n for n, _ in expected]
    assert all(obs.snapshots[0][n] is v for n, v in expected)


@pytest.mark.clause("pop.4")
@given(t=transports(), data=st.data())
def test_observer_error_propagates_unchanged(t, data):
    """pop.4: an exception raised by from_pp_tensors propagates unchanged."""
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    obs = RecordingObserver("raise")
    with pytest.raises(ObserverFailure) as info:
        t.pop(d, obs)
    assert info.value is obs.error


@pytest.mark.clause("pop.5")
@given(t=transports(), data=st.data())
def test_observer_returning_none_is_p4(t, data):
    """pop.5: an observer that returns None raises P4."""
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    with raises_documented("P4"):
        t.pop(d, RecordingObserver("return_none"))


@pytest.mark.clause("pop.6")
@given(case=pop_cases())
def test_failed_pop_leaves_dict_exactly_as_before(case):
    """pop.6: when pop raises, for any reason (P1-P4 or the observer's own error), the dict is exactly as before."""
    t, d, obs = case
    assert_all_or_nothing(t.pop, d, obs)


@pytest.mark.clause("pop.7")
@given(t=transports(), data=st.data())
def test_success_returns_observer_object_and_removes_exactly_aux_keys(t, data):
    """pop.7: success returns the observer's own object; the dict loses exactly the aux keys, others keep value and position."""
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    keep = [(k, v) for k, v in d.items() if not (isinstance(k, str) and k.startswith(t.prefix))]
    obs = RecordingObserver()
    assert t.pop(d, obs) is obs.returned[0]
    assert_same_dict(d, keep)
