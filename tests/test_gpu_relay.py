"""GPU placements of the relay. Not yet run on a GPU: this project's machine has none."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from ppaux_strategies import PPOutput, RecordingObserver, tensors_equal

import ppaux.relay.differential as differential
from ppaux.core.transport import SGLANG_TRANSPORT
from ppaux.relay.faults import classify
from ppaux.relay.hop import relay
from ppaux.relay.pipeline import PipelineConfig, Stage, run

pytestmark = [
    pytest.mark.wire,
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs CUDA: GPU placements cannot run on a CPU-only machine"
    ),
]


def test_cuda_tensors_go_through_add_and_pop_untouched():
    t = torch.arange(4, device="cuda")
    d = {}
    SGLANG_TRANSPORT.add(d, PPOutput({"s": t}))
    obs = RecordingObserver()
    SGLANG_TRANSPORT.pop(d, obs)
    assert obs.snapshots[0]["s"] is t


def test_cuda_metadata_is_received_on_the_receivers_own_cuda_device():
    """Only the device type travels: the receiver allocates on its own current CUDA device."""
    last = torch.cuda.device_count() - 1
    got = relay({"s": torch.arange(4, device="cuda:0")}, device=f"cuda:{last}")
    assert got["s"].device == torch.device(f"cuda:{last}") and got["s"].tolist() == [0, 1, 2, 3]


def test_cuda_to_cpu_ring_delivers_cpu_tensors_where_the_receiver_is_cpu():
    """A last stage on CUDA relaying to a first stage on CPU: the metadata says "cuda", so the CPU
    stage still allocates on CUDA (SGLang keeps the sent device type)."""
    config = PipelineConfig(
        [Stage(device="cpu", observer=RecordingObserver()), Stage(device="cuda")], outputs=[{"s": torch.arange(4)}]
    )
    out = run(config)
    got = out[0].value.received[0]["s"]
    assert got.device.type == "cuda" and tensors_equal(got, torch.arange(4))
    assert classify(out, config).outcome == "silent corruption"  # arrived off the receiver's device


@given(st.data())
def test_the_wire_diff_draws_cpu_dicts_where_cuda_is_visible(data):
    # Both of its sides relay over gloo between threads of this process: the dicts it draws stay on the CPU.
    sent = differential.sent_dicts(data.draw, 2)
    assert {v.device.type for d in sent for v in d.values() if torch.is_tensor(v)} <= {"cpu"}
