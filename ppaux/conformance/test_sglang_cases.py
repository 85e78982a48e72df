"""The cases SGLang's own unit tests cover (``test/registered/unit/sampling/test_sampling_observer_pp.py``
in its repository), with the exact messages instead of SGLang's regex fragments, plus the one they
leave out (P1, no observer), against the implementation under test."""

from __future__ import annotations

import pytest
import torch

from ppaux.conformance.support import assert_same_dict, raises_documented, snapshot
from ppaux_strategies import PPOutput, RecordingObserver

pytestmark = pytest.mark.contract


@pytest.fixture
def t(ppaux_impl):
    return ppaux_impl


@pytest.mark.clause("add.1")
def test_none_output_leaves_transport_unchanged(t):
    tensors = {"hidden_states": torch.tensor([1.0])}
    snap = snapshot(tensors)
    t.add(tensors, None)
    assert_same_dict(tensors, snap)


@pytest.mark.clause("add.7")
def test_add_namespaces_multiple_auxiliary_tensors(t):
    hidden, scores, token_ids = torch.tensor([1.0]), torch.tensor([0.2, 0.8]), torch.tensor([3, 7])
    tensors = {"hidden_states": hidden}
    t.add(tensors, PPOutput({"scores": scores, "token_ids": token_ids}))
    assert tensors == {"hidden_states": hidden, t.prefix + "scores": scores, t.prefix + "token_ids": token_ids}
    assert list(tensors) == ["hidden_states", t.prefix + "scores", t.prefix + "token_ids"]


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
def test_add_rejects_malformed_payloads(t, payload, code, name):
    with raises_documented(t, code, *([name] if name else [])):
        t.add({}, PPOutput(payload))


@pytest.mark.clause("add.5")
def test_add_rejects_reserved_key_collision_without_overwriting(t):
    existing = torch.tensor([9.0])
    tensors = {t.prefix + "scores": existing}
    with raises_documented(t, "A5", "scores"):
        t.add(tensors, PPOutput({"scores": torch.tensor([1.0])}))
    assert tensors == {t.prefix + "scores": existing} and tensors[t.prefix + "scores"] is existing


@pytest.mark.clause("pop.2")
def test_pop_without_auxiliary_data_skips_observer(t):
    tensors = {"hidden_states": torch.tensor([1.0])}
    snap = snapshot(tensors)
    observer = RecordingObserver()
    assert t.pop(tensors, observer) is None
    assert observer.calls == []
    assert_same_dict(tensors, snap)


@pytest.mark.clause("pop.3")
def test_pop_rejects_non_tensor_payload_before_observer(t):
    observer = RecordingObserver()
    with raises_documented(t, "P3"):
        t.pop({t.prefix + "scores": [0.4, 0.6]}, observer)
    assert observer.calls == []


@pytest.mark.clause("pop.5")
def test_pop_rejects_failed_reconstruction(t):
    scores = torch.tensor([0.4, 0.6])
    observer = RecordingObserver("return_none")
    with raises_documented(t, "P4"):
        t.pop({t.prefix + "scores": scores}, observer)
    assert observer.snapshots == [{"scores": scores}] and observer.snapshots[0]["scores"] is scores


@pytest.mark.clause("pop.3")
def test_pop_without_an_observer_is_p1(t):
    scores = torch.tensor([0.4, 0.6])
    tensors = {"hidden_states": torch.tensor([1.0]), t.prefix + "scores": scores}
    snap = snapshot(tensors)
    with raises_documented(t, "P1"):
        t.pop(tensors, None)
    assert_same_dict(tensors, snap)
