"""The wire layer over the loopback channel: SGLang's send/recv_tensor_dict, property by property."""

from __future__ import annotations

import pickle

import pytest
import torch
from hypothesis import given
from ppaux_strategies import (
    CONTIGUOUS_VIEWS,
    PPOutput,
    RecordingObserver,
    aux_payloads,
    tensors,
    tensors_equal,
    transport_dicts,
)

from ppaux.core.transport import _OUTPUT_PREFIX
from ppaux.core.transport import SGLANG_TRANSPORT as impl
from ppaux.relay.channels import GLOO_NOT_CONTIGUOUS, ChannelHang, LoopbackChannel, ThreadAllGather, WireSizeMismatch
from ppaux.relay.hop import relay
from ppaux.relay.wire import (
    CPU_GROUP,
    DEVICE_GROUP,
    TensorMetadata,
    recv_object,
    recv_tensor_dict,
    send_object,
    send_split,
    send_tensor_dict,
    split_tensor_dict,
)
from tests.support import DoneWork, SentLog

pytestmark = pytest.mark.wire

CONTIGUOUS = tensors(views=CONTIGUOUS_VIEWS, device="cpu")


def _hop(d, **kw):
    ch = LoopbackChannel()
    send_tensor_dict(ch, d)
    out = recv_tensor_dict(ch, **kw)
    assert ch.pending() == 0
    return out


@given(d=transport_dicts(tensors=CONTIGUOUS), payload=aux_payloads(tensors=CONTIGUOUS))
def test_round_trip_through_the_wire_hands_the_observer_equal_tensors(d, payload):
    """add, relay, pop: the observer gets every aux tensor equal in value, dtype and shape, on the
    receiver's device; the other keys arrive in order with equal values; no aux key is left."""
    sent = dict(d)
    impl.add(d, PPOutput(payload))
    got = _hop(d)
    assert list(got) == list(d)
    obs = RecordingObserver()
    impl.pop(got, obs)
    (received,) = obs.snapshots
    assert sorted(received) == sorted(payload)
    for name, tensor in payload.items():
        assert tensors_equal(received[name], tensor) and received[name].device.type == "cpu"
    assert list(got) == list(sent)
    assert not any(isinstance(k, str) and k.startswith(_OUTPUT_PREFIX) for k in got)
    for key, value in sent.items():
        if torch.is_tensor(value):
            assert tensors_equal(got[key], value)
        else:
            assert got[key] == value


def test_split_keeps_order_and_sends_only_device_type():
    d = {"a": torch.zeros(2, 3), "__msg_type__": "output", "b": torch.ones(1, dtype=torch.int8)}
    metadata, tensor_list = split_tensor_dict(d)
    assert metadata == [
        ("a", TensorMetadata("cpu", torch.float32, torch.Size([2, 3]))),
        ("__msg_type__", "output"),
        ("b", TensorMetadata("cpu", torch.int8, torch.Size([1]))),
    ]
    assert tensor_list[0] is d["a"] and tensor_list[1] is d["b"]


def test_non_tensor_values_arrive_as_copies():
    value = {"per_req": [1, 2]}
    got = _hop({"x": value})
    assert got["x"] == value and got["x"] is not value


def test_empty_tensors_are_not_sent_but_recreated():
    ch = LoopbackChannel()
    send_tensor_dict(ch, {"e": torch.empty(0, 4, dtype=torch.float16)})
    assert ch.outbox["cpu"].qsize() == 2  # the pickled metadata's size and bytes, no tensor data
    got = recv_tensor_dict(ch)
    assert got["e"].shape == (0, 4) and got["e"].dtype == torch.float16


def test_requires_grad_and_subclasses_are_not_preserved():
    param = torch.nn.Parameter(torch.ones(3))
    got = _hop({"p": param})["p"]
    assert type(got) is torch.Tensor and not got.requires_grad and torch.equal(got, torch.ones(3))


def test_sglang_finding_non_contiguous_aux_payload_breaks_the_relay():
    """SGLang finding: add keeps a non-contiguous aux tensor as is, and the relay refuses it with gloo's error."""
    d = {"next_token_ids": torch.arange(2)}
    impl.add(d, PPOutput({"scores": torch.arange(6.0).reshape(2, 3).t()}))
    ch = LoopbackChannel()
    with pytest.raises(RuntimeError) as info:
        send_tensor_dict(ch, d)
    assert str(info.value) == GLOO_NOT_CONTIGUOUS == "input tensor has to be contiguous"
    # The metadata and next_token_ids went out first: the receiver is left waiting for the rest.
    assert ch.pending() == 3


def test_receiver_allocates_on_its_own_device_of_the_sent_type():
    got = _hop({"t": torch.arange(3)}, device=torch.device("cpu"))
    assert got["t"].device == torch.device("cpu")
    # A stage whose own device is of another type keeps the sent type (SGLang's rule).
    got = _hop({"t": torch.arange(3)}, device="meta")
    assert got["t"].device.type == "cpu" and torch.equal(got["t"], torch.arange(3))


def test_send_rejects_a_non_dict():
    with pytest.raises(TypeError) as info:
        send_tensor_dict(LoopbackChannel(), [("a", 1)])
    assert str(info.value) == "Expecting a dictionary, got <class 'list'>"


def test_loopback_models_gloo_sizes():
    """A longer message is an error (gloo aborts); a shorter one fills the start of the tensor silently."""
    ch = LoopbackChannel()
    ch.send(torch.zeros(4, dtype=torch.uint8), "cpu")
    with pytest.raises(WireSizeMismatch) as info:
        ch.recv(torch.empty(3, dtype=torch.uint8), "cpu")
    assert str(info.value) == "Received data size doesn't match expected size: 4 vs 3 bytes"
    ch.send(torch.tensor([7, 7], dtype=torch.uint8), "cpu")
    out = torch.full((3,), 9, dtype=torch.uint8)
    ch.recv(out, "cpu")
    assert out.tolist() == [7, 7, 0]


def test_loopback_raises_instead_of_blocking():
    with pytest.raises(ChannelHang) as info:
        LoopbackChannel().recv(torch.empty(1), "device")
    assert str(info.value) == "nothing to receive on the device group: a real channel would block here"


def _all_gather_hop(per_rank):
    """Two sender ranks relay to two receiver ranks whose all-gather group joins the slices."""
    import threading

    n = len(per_rank)
    chans = [LoopbackChannel() for _ in range(n)]
    group = ThreadAllGather(n)

    class Member:
        def __init__(self, rank):
            self.size, self.rank = n, rank

    for rank, d in enumerate(per_rank):
        send_tensor_dict(chans[rank], d, all_gather_group=Member(rank))
    out = [None] * n

    def receive(rank):
        out[rank] = recv_tensor_dict(chans[rank], all_gather_group=group.member(rank))

    threads = [threading.Thread(target=receive, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@given(t=tensors(views=CONTIGUOUS_VIEWS, device="cpu", max_dims=2, max_side=4))
def test_all_gather_slicing_is_lossless_for_rank_identical_tensors(t):
    """With an all-gather group, a tensor that is the same on every rank arrives whole on every rank."""
    for got in _all_gather_hop([{"x": t}, {"x": t.clone()}]):
        assert tensors_equal(got["x"], t)


def test_sglang_finding_rank_divergent_aux_tensor_is_silently_mixed():
    """SGLang finding: an aux tensor that differs across the all-gather group arrives as a mix of
    every rank's slice, on every rank, and pop accepts it."""
    rank0 = {_OUTPUT_PREFIX + "scores": torch.tensor([1.0, 2.0, 3.0, 4.0])}
    rank1 = {_OUTPUT_PREFIX + "scores": torch.tensor([10.0, 20.0, 30.0, 40.0])}
    got = _all_gather_hop([rank0, rank1])
    for received in got:
        obs = RecordingObserver()
        impl.pop(received, obs)
        assert obs.snapshots[0]["scores"].tolist() == [1.0, 2.0, 30.0, 40.0]


def test_all_gather_sends_whole_tensors_whose_size_does_not_divide():
    """numel % n != 0: the tensor is sent whole, so even a rank-divergent one arrives intact."""
    got = _all_gather_hop([{"x": torch.tensor([1, 2, 3])}, {"x": torch.tensor([7, 8, 9])}])
    assert got[0]["x"].tolist() == [1, 2, 3] and got[1]["x"].tolist() == [7, 8, 9]


@given(d=transport_dicts(tensors=CONTIGUOUS))
def test_relay_helper_matches_a_manual_hop(d):
    got = relay(d)
    assert list(got) == list(d)
    for key, value in d.items():
        assert tensors_equal(got[key], value) if torch.is_tensor(value) else got[key] == value


def test_async_send_on_a_channel_without_isend_sends_in_order():
    ch = LoopbackChannel()
    send_tensor_dict(ch, {"a": torch.arange(3), "b": "x"}, async_send=True)
    got = recv_tensor_dict(ch)
    assert got["a"].tolist() == [0, 1, 2] and got["b"] == "x"


class _CallLog(LoopbackChannel):
    """A loopback link that also offers ``isend`` and logs which of the two each send used."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def send(self, tensor, group):
        self.calls.append("send")
        super().send(tensor, group)

    def isend(self, tensor, group):
        self.calls.append("isend")
        super().send(tensor, group)
        return DoneWork()


@pytest.mark.parametrize(
    "kwargs, used", [({}, "send"), ({"async_send": False}, "send"), ({"async_send": True}, "isend")]
)
def test_sends_block_unless_async_send_is_asked_for(kwargs, used):
    ch = _CallLog()
    send_tensor_dict(ch, {"a": torch.arange(3), "b": "x"}, **kwargs)
    # size and bytes of the metadata, then the one tensor
    assert ch.calls == [used] * 3
    assert recv_tensor_dict(ch)["a"].tolist() == [0, 1, 2]


def test_wire_format_is_an_int64_size_then_uint8_bytes_then_each_tensor_on_its_group():
    log = SentLog()
    payload = {"ids": torch.arange(3), "msg": "x", "logits": torch.empty(2, 5, device="meta")}
    send_tensor_dict(log, payload)
    metadata, _ = split_tensor_dict(payload)
    pickled = len(pickle.dumps(metadata))
    assert [m[:4] for m in log.messages] == [
        ("cpu", torch.int64, (1,), "cpu"),
        ("cpu", torch.uint8, (pickled,), "cpu"),
        ("cpu", torch.int64, (3,), "cpu"),
        ("device", torch.float32, (2, 5), "meta"),
    ]


def test_send_object_alone_blocks_even_on_a_channel_with_isend():
    ch = _CallLog()
    send_object(ch, ["anything"])
    assert ch.calls == ["send", "send"] and recv_object(ch) == ["anything"]


def test_send_split_blocks_by_default():
    ch = _CallLog()
    send_split(ch, *split_tensor_dict({"a": torch.arange(2)}))
    assert ch.calls == ["send"] * 3


class _RecvLog(LoopbackChannel):
    def __init__(self):
        super().__init__()
        self.buffers = []

    def recv(self, tensor, group):
        self.buffers.append((group, tensor.dtype, tuple(tensor.shape)))
        super().recv(tensor, group)


def test_receiver_allocates_exactly_what_the_wire_format_says():
    ch = _RecvLog()
    send_tensor_dict(ch, {"ids": torch.arange(3, dtype=torch.int32), "msg": "x"})
    metadata, _ = split_tensor_dict({"ids": torch.arange(3, dtype=torch.int32), "msg": "x"})
    recv_tensor_dict(ch)
    assert ch.buffers == [
        ("cpu", torch.int64, (1,)),
        ("cpu", torch.uint8, (len(pickle.dumps(metadata)),)),
        ("cpu", torch.int32, (3,)),
    ]


def test_receiver_takes_each_tensor_on_the_group_of_its_device():
    """A device tensor is received on the device group, as it was sent; the CPU group would pair it
    with the wrong communicator. Meta tensors stand in for device tensors on a CPU-only machine."""
    ch = _RecvLog()
    send_tensor_dict(ch, {"ids": torch.arange(3), "logits": torch.empty(2, 5, device="meta")})
    got = recv_tensor_dict(ch)
    assert got["logits"].is_meta
    # size and bytes of the metadata, then ids, then logits
    assert [group for group, *_ in ch.buffers] == [CPU_GROUP, CPU_GROUP, CPU_GROUP, DEVICE_GROUP]


def test_receiver_asks_for_its_own_device_of_the_sent_type(monkeypatch):
    """Which device each tensor lands on is decided from the sent type and the receiver's own
    device (cuda:1 for a "cuda" tensor on a stage at cuda:1); recorded, as this machine may lack CUDA."""
    from ppaux.relay import wire

    asked = []
    real = wire._receiver_device
    monkeypatch.setattr(wire, "_receiver_device", lambda sent, own: asked.append((sent, own)) or real(sent, own))
    ch = LoopbackChannel()
    send_tensor_dict(ch, {"a": torch.arange(2)})
    recv_tensor_dict(ch, device="cuda:1")
    send_tensor_dict(ch, {"a": torch.arange(2)})
    recv_tensor_dict(ch)
    assert asked == [("cpu", torch.device("cuda", 1)), ("cpu", None)]


def test_a_receive_nobody_can_ever_answer_gives_up_with_its_reason():
    from ppaux.relay.channels import Stall, mailbox

    links = mailbox()
    # One live thread, and it is this one, waiting: nothing can ever arrive.
    ch = LoopbackChannel(links, links, stall=Stall(alive=1), timeout=30.0)
    with pytest.raises(ChannelHang) as info:
        ch.recv(torch.empty(1), "cpu")
    assert str(info.value) == "nothing will arrive on the cpu group: every peer is waiting or has failed"


def test_a_one_element_step_slice_crosses_the_loopback_as_it_crosses_gloo():
    """torch.arange(6.0)[::6]: shape (1,), stride (6,), contiguous by torch's rule; gloo and SGLang's
    send_tensor_dict carry it, so the model must too."""
    stepped = torch.arange(6.0)[::6]
    assert stepped.is_contiguous() and stepped.stride() == (6,)
    row = torch.arange(12.0).reshape(4, 3)[::4]
    assert row.is_contiguous() and row.stride() == (12, 1)
    got = _hop({"x": stepped, "y": row})
    assert got["x"].tolist() == [0.0] and got["y"].tolist() == [[0.0, 1.0, 2.0]]


def test_nothing_moves_for_a_meta_tensor_as_in_torch_distributed():
    """torch.distributed's meta kernels return at once: SGLang's relay sends and receives nothing for a
    meta tensor, and the next receive takes the bytes that were meant for it (gloo then aborts)."""
    ch = LoopbackChannel()
    ch.send(torch.empty(2, device="meta"), "cpu")
    assert ch.pending() == 0
    ch.send(torch.tensor([1.0, 2.0]), "cpu")
    ch.recv(torch.empty(2, device="meta"), "cpu")
    assert ch.pending() == 1
    with pytest.raises(WireSizeMismatch):
        ch.recv(torch.empty(1), "cpu")
