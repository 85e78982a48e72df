"""ppaux.relay.relay: the one-hop relay used by the plugin-author kit."""

from __future__ import annotations

import pytest
import torch

from ppaux.relay import gloo, hop
from ppaux.relay.hop import relay

pytestmark = pytest.mark.wire

SAMPLE = {
    "next_token_ids": torch.arange(4),
    "__msg_type__": "output",
    "empty": torch.empty(0, 3),
    "__sampling_observer_output__.scores": torch.arange(6.0).reshape(2, 3),
}


# Over gloo in .ci/run's full run: the quick run starts one gloo world (tests/test_gloo.py's round trip),
# and an xdist worker that met only this test would start a second.
@pytest.mark.parametrize(
    "channel", ["loopback", pytest.param("gloo", marks=[pytest.mark.gloo, pytest.mark.subprocess])]
)
def test_relay_keeps_keys_values_and_non_tensors(channel):
    """One hop keeps key order, tensor values/dtypes/shapes, and non-tensor values (as copies)."""
    out = relay(SAMPLE, channel=channel)
    assert list(out) == list(SAMPLE)
    assert out["__msg_type__"] == "output"
    for key in ("next_token_ids", "empty", "__sampling_observer_output__.scores"):
        assert out[key].dtype == SAMPLE[key].dtype and out[key].shape == SAMPLE[key].shape
        assert torch.equal(out[key], SAMPLE[key]) and out[key] is not SAMPLE[key]


# Over gloo the receiver is left mid-dict and the shared world torn down: the next one starts afresh.
@pytest.mark.parametrize(
    "channel", ["loopback", pytest.param("gloo", marks=[pytest.mark.gloo, pytest.mark.subprocess])]
)
def test_relay_raises_gloos_error_on_non_contiguous(channel):
    """A non-contiguous tensor raises gloo's own message instead of hanging."""
    with pytest.raises(RuntimeError) as info:
        relay({"t": torch.arange(6.0).reshape(2, 3).t()}, channel=channel)
    assert str(info.value) == "input tensor has to be contiguous"


def test_relay_rejects_unknown_channel():
    with pytest.raises(ValueError) as info:
        relay({}, channel="tcp")
    assert str(info.value) == "channel='tcp' must be one of ('loopback', 'gloo', 'sglang')"


def test_relay_hands_the_receivers_device_to_the_receiving_end(monkeypatch):
    """On a CPU-only machine every device lands as "cpu", so record what each channel is told."""
    told = []
    real_recv = hop.recv_tensor_dict
    monkeypatch.setattr(hop, "recv_tensor_dict", lambda ch, **kw: told.append(("loopback", kw)) or real_recv(ch, **kw))
    monkeypatch.setattr(gloo, "relay", lambda d, **kw: told.append(("gloo", kw)) or dict(d))
    relay(SAMPLE, channel="loopback", device="cuda:1")
    relay(SAMPLE, channel="gloo", device="cuda:1")
    relay(SAMPLE, channel="loopback")
    assert told == [("loopback", {"device": "cuda:1"}), ("gloo", {"device": "cuda:1"}), ("loopback", {"device": None})]
