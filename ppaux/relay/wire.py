"""The PP dict on the wire: SGLang 0.5.23's ``send_tensor_dict`` / ``recv_tensor_dict``, over any channel.

Re-implemented (not copied) from ``GroupCoordinator`` in
``sglang/srt/distributed/parallel_state.py`` so that the suite can show what the relay does
to auxiliary outputs. What SGLang does, this does, including what it loses:

- key order is kept; every value that is not a tensor rides in the pickled metadata list and
  arrives as a copy;
- a tensor travels as ``TensorMetadata(device type, dtype, size)`` plus its bytes; empty
  tensors send no bytes; the receiver allocates ``torch.empty(size, dtype, device=<type>)``
  on its own device of that type, so strides, ``requires_grad`` and subclasses are lost;
- CPU tensors use the CPU (gloo) group, others the device group, and the channel (like gloo)
  refuses non-contiguous tensors, which SGLang does not make contiguous for aux payloads;
- with an all-gather group of size n and ``numel % n == 0`` only this rank's slice is sent and
  the receiver all-gathers the slices: lossless only if the tensor is the same on every rank.

A channel is anything with ``send(tensor, group)`` and ``recv(tensor, group)`` (``group`` is
``"cpu"`` or ``"device"``); see :mod:`ppaux.relay.channels`.
"""

from __future__ import annotations

import pickle
from collections import namedtuple
from collections.abc import Hashable
from typing import Any, Protocol, TypeAlias, TypeGuard

import torch

TensorMetadata = namedtuple("TensorMetadata", ["device", "dtype", "size"])

# A PP dict as SGLang relays it: str keys in practice, any key in the contract (non-str keys ride
# along), tensors or any picklable values; not dict[object, object], which is invariant: a caller's
# dict[str, torch.Tensor] must pass.
TensorDict: TypeAlias = dict[Any, Any]
# The pickled half of a dict on the wire: (key, value or TensorMetadata) in key order.
MetadataList: TypeAlias = list[tuple[Hashable, object]]

CPU_GROUP = "cpu"
DEVICE_GROUP = "device"


class SendChannel(Protocol):
    """What a send needs of a channel."""

    def send(self, tensor: torch.Tensor, group: str) -> None: ...  # pragma: no cover

    # Optional: start a send and return something with ``wait()`` (SGLang's ``isend``).
    # def isend(self, tensor: torch.Tensor, group: str) -> Work


class Channel(SendChannel, Protocol):
    def recv(self, tensor: torch.Tensor, group: str) -> None: ...  # pragma: no cover


class Work(Protocol):
    """A started send (SGLang's ``P2PWork``, torch's ``Work``): ``wait()`` until it is done."""

    def wait(self) -> object: ...  # pragma: no cover


class AllGatherGroup(Protocol):
    """The attention-TP group of SGLang's relay: ``size`` ranks, this one is ``rank``."""

    size: int
    rank: int

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor: ...  # pragma: no cover


def split_tensor_dict(tensor_dict: TensorDict) -> tuple[MetadataList, list[torch.Tensor]]:
    """(metadata list in key order, tensors): SGLang's ``_split_tensor_dict``."""
    metadata_list: MetadataList = []
    tensor_list: list[torch.Tensor] = []
    for key, value in tensor_dict.items():
        if isinstance(value, torch.Tensor):
            # Only the device *type*: the receiver picks its own index.
            metadata_list.append((key, TensorMetadata(value.device.type, value.dtype, value.size())))
            tensor_list.append(value)
        else:
            metadata_list.append((key, value))
    return metadata_list, tensor_list


class _Sender:
    """Sends one after the other, or (``async_send``) starts them all and waits at the end."""

    def __init__(self, channel: SendChannel, async_send: bool = False) -> None:
        self.channel = channel
        self.isend = getattr(channel, "isend", None) if async_send else None
        self.works: list[tuple[Work, torch.Tensor]] = []

    def __call__(self, tensor: torch.Tensor, group: str) -> None:
        if self.isend is None:
            self.channel.send(tensor, group)
        else:
            # Keep the tensor with its work: it must outlive the send.
            self.works.append((self.isend(tensor, group), tensor))

    def wait(self) -> None:
        for work, _ in self.works:
            work.wait()


def send_object(channel: SendChannel, obj: object) -> None:
    """Pickle ``obj`` and send its size, then its bytes, on the CPU group (``send_object``)."""
    _send_object(_Sender(channel), obj)


def _send_object(send: _Sender, obj: object) -> None:
    payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
    # The size travels as a one-element int64 tensor (torch's dtype for a Python int).
    send(torch.tensor([payload.numel()]), CPU_GROUP)
    send(payload, CPU_GROUP)


def recv_object(channel: Channel) -> Any:  # Any: whatever the peer pickled
    size = torch.empty(1, dtype=torch.long)
    channel.recv(size, CPU_GROUP)
    payload = torch.empty(int(size.item()), dtype=torch.uint8)
    channel.recv(payload, CPU_GROUP)
    return pickle.loads(payload.numpy().tobytes())


def _use_all_gather(group: AllGatherGroup | None, numel: int) -> TypeGuard[AllGatherGroup]:
    return group is not None and numel % group.size == 0


def send_tensor_dict(
    channel: SendChannel,
    tensor_dict: TensorDict,
    *,
    all_gather_group: AllGatherGroup | None = None,
    async_send: bool = False,
) -> None:
    """Send ``tensor_dict`` to the peer behind ``channel`` the way SGLang's PP group does.

    ``async_send`` starts every send before waiting for any (SGLang's PP output relay passes
    ``async_send=True`` and waits on the works later); this waits before returning.
    """
    if not isinstance(tensor_dict, dict):
        raise TypeError(f"Expecting a dictionary, got {type(tensor_dict)}")
    metadata_list, tensor_list = split_tensor_dict(tensor_dict)
    send_split(channel, metadata_list, tensor_list, all_gather_group=all_gather_group, async_send=async_send)


def send_split(
    channel: SendChannel,
    metadata_list: MetadataList,
    tensor_list: list[torch.Tensor],
    *,
    all_gather_group: AllGatherGroup | None = None,
    async_send: bool = False,
) -> None:
    """The sending half after the split: metadata first, then each non-empty tensor (or its slice)."""
    send = _Sender(channel, async_send)
    _send_object(send, metadata_list)
    for tensor in tensor_list:
        if tensor.numel() == 0:
            continue
        if _use_all_gather(all_gather_group, tensor.numel()):
            tensor = tensor.reshape(all_gather_group.size, -1)[all_gather_group.rank]
        send(tensor, CPU_GROUP if tensor.is_cpu else DEVICE_GROUP)
    send.wait()


def _receiver_device(meta_device: str, device: torch.device | None) -> torch.device | str:
    # The receiver's own device of the sent type (e.g. cuda:1 for "cuda"); the bare type otherwise.
    if device is not None and device.type == meta_device:
        return device
    return meta_device


def recv_tensor_dict(
    channel: Channel,
    *,
    all_gather_group: AllGatherGroup | None = None,
    device: torch.device | str | None = None,
) -> TensorDict:
    """Receive one dict from the peer behind ``channel``; ``device`` is this stage's own device."""
    own = None if device is None else torch.device(device)
    tensor_dict: TensorDict = {}
    for key, value in recv_object(channel):
        if not isinstance(value, TensorMetadata):
            tensor_dict[key] = value
            continue
        tensor = torch.empty(value.size, dtype=value.dtype, device=_receiver_device(value.device, own))
        if tensor.numel() == 0:
            tensor_dict[key] = tensor
            continue
        gather = _use_all_gather(all_gather_group, tensor.numel())
        if gather:
            shape = tensor.shape
            # gather is True only with a group (_use_all_gather), which a bool kept for later cannot tell mypy.
            tensor = tensor.reshape(all_gather_group.size, -1)[all_gather_group.rank]  # type: ignore[union-attr]
        channel.recv(tensor, CPU_GROUP if tensor.is_cpu else DEVICE_GROUP)
        if gather:
            tensor = all_gather_group.all_gather(tensor).reshape(shape)  # type: ignore[union-attr]
        tensor_dict[key] = tensor
    return tensor_dict
