"""Integrity mode: the manifest that add writes and pop verifies (catalog entries I1-I7)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from ppaux_strategies import (
    CONTIGUOUS_VIEWS,
    NotPPOutput,
    PPOutput,
    RecordingObserver,
    aux_payloads,
    tensors,
    tensors_equal,
    transport_dicts,
)

from ppaux.conformance.support import assert_same_dict, snapshot
from ppaux.core.integrity import INTEGRITY_TRANSPORT, MANIFEST_KEY, IntegrityTransport, checksum
from ppaux.core.transport import _OUTPUT_PREFIX, PPAuxTransport
from ppaux.relay.channels import LoopbackChannel
from ppaux.relay.wire import recv_tensor_dict, send_tensor_dict
from tests.support import raises_catalog

pytestmark = pytest.mark.wire

T = INTEGRITY_TRANSPORT
CONTIGUOUS = tensors(views=CONTIGUOUS_VIEWS, device="cpu")


def _added(payload, batch=None):
    d = {"next_token_ids": torch.arange(2)}
    T.add(d, PPOutput(payload), batch=batch)
    return d


@given(d=transport_dicts(tensors=CONTIGUOUS), payload=aux_payloads(tensors=CONTIGUOUS))
def test_integrity_round_trip_through_the_wire(d, payload):
    """With integrity on, every valid output survives the relay and pop removes the manifest too."""
    before = list(d)
    T.add(d, PPOutput(payload), batch=7)
    assert list(d)[-1] == MANIFEST_KEY
    ch = LoopbackChannel()
    send_tensor_dict(ch, d)
    got = recv_tensor_dict(ch)
    obs = RecordingObserver()
    T.pop(got, obs, batch=7)
    assert list(got) == before
    for name, tensor in payload.items():
        assert tensors_equal(obs.snapshots[0][name], tensor)


def test_manifest_lists_name_dtype_shape_and_checksum():
    d = _added({"s": torch.tensor([1.0, 2.0])}, batch=3)
    assert d[MANIFEST_KEY] == {
        "batch": 3,
        "tensors": (("s", "torch.float32", (2,), checksum(torch.tensor([1.0, 2.0]))),),
    }


def test_i1_non_contiguous_payload_is_refused_and_the_dict_is_unchanged():
    d = {"next_token_ids": torch.arange(2)}
    snap = snapshot(d)
    with raises_catalog("I1", "s"):
        T.add(d, PPOutput({"ok": torch.zeros(2), "s": torch.zeros(3, 2).t()}))
    assert_same_dict(d, snap)


def test_add_errors_and_none_outputs_are_the_base_transports():
    d = {"x": 1}
    with raises_catalog("A1"):
        T.add(d, NotPPOutput())
    T.add(d, None)
    assert d == {"x": 1}


def test_i2_aux_keys_without_a_manifest():
    d = {_OUTPUT_PREFIX + "s": torch.zeros(1)}
    snap = snapshot(d)
    with raises_catalog("I2"):
        T.pop(d, RecordingObserver())
    assert_same_dict(d, snap)


def test_no_aux_and_no_manifest_pops_nothing():
    d = {"x": torch.zeros(1)}
    assert T.pop(d, None) is None and list(d) == ["x"]


@pytest.mark.parametrize(
    "tamper, code, name",
    [
        (lambda d: d.pop(_OUTPUT_PREFIX + "s"), "I3", "s"),
        (lambda d: d.__setitem__(_OUTPUT_PREFIX + "extra", torch.zeros(1)), "I4", "extra"),
        (lambda d: d.__setitem__(_OUTPUT_PREFIX + "s", torch.zeros(2, dtype=torch.int32)), "I5", "s"),
        (lambda d: d.__setitem__(_OUTPUT_PREFIX + "s", torch.zeros(1, 2)), "I5", "s"),
        (lambda d: d.__setitem__(_OUTPUT_PREFIX + "s", torch.tensor([1.0, 2.5])), "I6", "s"),
        (lambda d: d.__setitem__(_OUTPUT_PREFIX + "s", torch.empty(2, device="meta")), "I6", "s"),
    ],
)
def test_each_tampering_is_a_documented_error_and_pop_changes_nothing(tamper, code, name):
    d = _added({"s": torch.tensor([1.0, 2.0])})
    tamper(d)
    snap = snapshot(d)
    obs = RecordingObserver()
    with raises_catalog(code, name):
        T.pop(d, obs)
    assert_same_dict(d, snap)
    assert obs.calls == []


def test_i7_output_of_another_batch():
    d = _added({"s": torch.zeros(1)}, batch=1)
    with raises_catalog("I7", 1):
        T.pop(d, RecordingObserver(), batch=0)


def test_base_pop_errors_keep_the_manifest():
    d = _added({"s": torch.zeros(1)})
    snap = snapshot(d)
    with raises_catalog("P1"):
        T.pop(d, None)
    assert_same_dict(d, snap)


def test_non_tensor_aux_value_is_left_to_the_base_pops_p3():
    d = _added({"s": torch.zeros(1)})
    d[_OUTPUT_PREFIX + "s"] = [0.0]
    with raises_catalog("P3"):
        T.pop(d, RecordingObserver())


def test_a_non_tensor_does_not_stop_the_check_of_the_tensors_after_it():
    d = _added({"s": torch.zeros(1), "t": torch.zeros(2)})
    d[_OUTPUT_PREFIX + "s"] = [0.0]
    d[_OUTPUT_PREFIX + "t"] = torch.zeros(2, dtype=torch.int32)
    with raises_catalog("I5", "t"):
        T.pop(d, RecordingObserver())


def test_the_manifest_goes_under_the_key_it_was_given():
    t = IntegrityTransport(manifest_key="__m__")
    d = {}
    t.add(d, PPOutput({"s": torch.zeros(1)}))
    assert list(d) == [_OUTPUT_PREFIX + "s", "__m__"]


def test_meta_tensors_carry_no_checksum():
    d = _added({"m": torch.empty(3, device="meta")})
    assert d[MANIFEST_KEY]["tensors"][0][3] is None
    obs = RecordingObserver()
    T.pop(d, obs)
    assert obs.snapshots[0]["m"].device.type == "meta"


def test_manifest_key_must_not_look_like_an_aux_key():
    with pytest.raises(ValueError) as info:
        IntegrityTransport(PPAuxTransport("__"), manifest_key="__m")
    assert str(info.value) == "manifest_key='__m' must not start with the aux prefix '__'"
