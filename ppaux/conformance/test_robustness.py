"""The contract's guarantees where SGLang differs (mark ``robustness``).

Against SGLang 0.5.23 these fail, each with a minimal counterexample: that is the finding.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import strategies as st
from ppaux_strategies import PPOutput, RecordingObserver, aux_payloads, transport_dicts

from ppaux.conformance.support import (
    add_cases,
    assert_all_or_nothing,
    assert_same_dict,
    assert_same_objects,
    snapshot,
    transports,
)
from ppaux.testing.impl import Implementation
from ppaux.testing.profiles import given

pytestmark = pytest.mark.robustness


@pytest.mark.clause("add.6")
@given(data=st.data())
def test_failed_add_leaves_dict_exactly_as_before(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """add.6: when add raises, for any reason, the dict is exactly as before (SGLang writes the items that passed)."""
    t, d, out = data.draw(add_cases(ppaux_impl, valid=False), label="case")
    assert_all_or_nothing(t.add, d, out)


@pytest.mark.clause("add.6")
def test_a_bad_item_after_a_good_one_writes_nothing(ppaux_impl: Implementation) -> None:
    """add.6: a payload whose second item is not a tensor leaves the dict as it was, the first item's key included."""
    assert_all_or_nothing(ppaux_impl.add, {}, PPOutput({"scores": torch.zeros(1), "bad": [0.5]}))


@pytest.mark.clause("pop.1")
@given(data=st.data())
def test_non_str_keys_are_ordinary_keys(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """pop.1: keys that are not str are never aux keys and are left alone (SGLang raises AttributeError)."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, non_str_keys=True), label="d")
    payload = data.draw(aux_payloads(prefix=t.prefix), label="payload")
    snap = snapshot(d)
    result = t.pop(d, None)
    assert result is None, f"expected pop to take no non-str key as an aux key and return None, got {result!r}"
    t.add(d, PPOutput(payload))
    obs = RecordingObserver()
    result = t.pop(d, obs)
    assert result is obs.returned[0], (
        f"expected pop to return the observer's own object {obs.returned[0]!r}, got {result!r}"
    )
    assert_same_objects(obs.snapshots[0], payload)
    assert_same_dict(d, snap)


@pytest.mark.clause("pop.4")
@given(data=st.data(), mode=st.sampled_from(["drop_one", "add_one", "clear"]))
def test_observer_changing_its_dict_does_not_change_the_pp_dict(
    ppaux_impl: Implementation, data: st.DataObject, mode: str
) -> None:
    """pop.4: an observer that changes the dict it was given changes nothing in the PP dict: pop still removes exactly
    the aux keys (pop.7) (SGLang deletes by the observer's dict: a dropped name leaks its key, an added name raises
    KeyError mid-deletion)."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix, aux=True), label="d")
    keep = [(k, v) for k, v in d.items() if not (isinstance(k, str) and k.startswith(t.prefix))]
    obs = RecordingObserver(mode)
    result = t.pop(d, obs)
    assert result is obs.returned[0], (
        f"expected pop to return the observer's own object {obs.returned[0]!r}, got {result!r}"
    )
    assert_same_dict(d, keep)
