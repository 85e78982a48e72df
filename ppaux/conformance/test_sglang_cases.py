"""The cases SGLang's own unit tests cover (``test/registered/unit/sampling/test_sampling_observer_pp.py``
in its repository), with the exact messages instead of SGLang's regex fragments, plus the one they
leave out (P1, no observer), against the implementation under test."""

from __future__ import annotations

import pytest
import torch
from ppaux_strategies import PPOutput, RecordingObserver

from ppaux.conformance.support import assert_same_dict, assert_same_objects, raises_documented, snapshot
from ppaux.testing.impl import Implementation

pytestmark = pytest.mark.contract


@pytest.fixture
def t(ppaux_impl: Implementation) -> Implementation:
    return ppaux_impl


@pytest.mark.clause("add.1")
def test_none_output_leaves_transport_unchanged(t: Implementation) -> None:
    """add.1: a None output leaves the dict as it was (SGLang's case)."""
    tensors = {"hidden_states": torch.tensor([1.0])}
    snap = snapshot(tensors)
    t.add(tensors, None)
    assert_same_dict(tensors, snap)


@pytest.mark.clause("add.7")
def test_add_namespaces_multiple_auxiliary_tensors(t: Implementation) -> None:
    """add.7: two tensors are added under prefix + name, after the ordinary key, the ordinary key untouched
    (SGLang's case)."""
    hidden, scores, token_ids = torch.tensor([1.0]), torch.tensor([0.2, 0.8]), torch.tensor([3, 7])
    tensors = {"hidden_states": hidden}
    t.add(tensors, PPOutput({"scores": scores, "token_ids": token_ids}))
    expected = {"hidden_states": hidden, t.prefix + "scores": scores, t.prefix + "token_ids": token_ids}
    assert tensors == expected, f"expected {expected!r}, got {tensors!r}"
    assert list(tensors) == list(expected), f"expected the keys in the order {list(expected)!r}, got {list(tensors)!r}"


@pytest.mark.clause("add.5")
@pytest.mark.parametrize(
    "payload, code, name",
    [
        ({}, "A2", None),
        ({"": torch.tensor([1.0])}, "A3", None),
        ({7: torch.tensor([1.0])}, "A3", None),
        ({"scores": [0.2, 0.8]}, "A4", "scores"),
    ],
    ids=["empty mapping", "empty name", "non-string name", "non-tensor value"],
)
def test_add_rejects_malformed_payloads(
    t: Implementation, payload: dict[object, object], code: str, name: str | None
) -> None:
    """add.5: an empty mapping is A2, an empty or non-string name A3, a non-tensor value A4 (SGLang's cases)."""
    with raises_documented(t, code, *([name] if name else [])):
        t.add({}, PPOutput(payload))


@pytest.mark.clause("add.5")
def test_add_rejects_reserved_key_collision_without_overwriting(t: Implementation) -> None:
    """add.5: a name whose reserved key is already in the dict is A5, and the key keeps its tensor (SGLang's case)."""
    existing = torch.tensor([9.0])
    tensors = {t.prefix + "scores": existing}
    with raises_documented(t, "A5", "scores"):
        t.add(tensors, PPOutput({"scores": torch.tensor([1.0])}))
    assert list(tensors) == [t.prefix + "scores"], (
        f"expected only the key {t.prefix + 'scores'!r}, got {list(tensors)!r}"
    )
    assert tensors[t.prefix + "scores"] is existing, (
        f"expected the existing tensor {existing!r} kept, got {tensors[t.prefix + 'scores']!r}"
    )


@pytest.mark.clause("pop.2")
def test_pop_without_auxiliary_data_skips_observer(t: Implementation) -> None:
    """pop.2: without aux items pop returns None and calls no observer (SGLang's case)."""
    tensors = {"hidden_states": torch.tensor([1.0])}
    snap = snapshot(tensors)
    observer = RecordingObserver()
    result = t.pop(tensors, observer)
    assert result is None, f"expected pop without aux items to return None, got {result!r}"
    assert observer.calls == [], f"expected no call of from_pp_tensors(), got {len(observer.calls)}"
    assert_same_dict(tensors, snap)


@pytest.mark.clause("pop.3")
def test_pop_rejects_non_tensor_payload_before_observer(t: Implementation) -> None:
    """pop.3: a non-tensor aux value is P3, raised before the observer is called (SGLang's case)."""
    observer = RecordingObserver()
    with raises_documented(t, "P3"):
        t.pop({t.prefix + "scores": [0.4, 0.6]}, observer)
    assert observer.calls == [], f"expected no call of from_pp_tensors() before P3, got {len(observer.calls)}"


@pytest.mark.clause("pop.5")
def test_pop_rejects_failed_reconstruction(t: Implementation) -> None:
    """pop.5: an observer that returns None is P4, after it was handed the aux tensor itself (SGLang's case)."""
    scores = torch.tensor([0.4, 0.6])
    observer = RecordingObserver("return_none")
    with raises_documented(t, "P4"):
        t.pop({t.prefix + "scores": scores}, observer)
    assert len(observer.snapshots) == 1, f"expected from_pp_tensors() called once, got {len(observer.snapshots)} calls"
    assert_same_objects(observer.snapshots[0], {"scores": scores})


@pytest.mark.clause("pop.3")
def test_pop_without_an_observer_is_p1(t: Implementation) -> None:
    """pop.3: aux items and no observer is P1, and the dict stays as it was (the case SGLang's tests leave out)."""
    scores = torch.tensor([0.4, 0.6])
    tensors = {"hidden_states": torch.tensor([1.0]), t.prefix + "scores": scores}
    snap = snapshot(tensors)
    with raises_documented(t, "P1"):
        t.pop(tensors, None)
    assert_same_dict(tensors, snap)
