"""The named relay channels, and one hop of the PP dict over one: what the next stage receives."""

from __future__ import annotations

from dataclasses import dataclass

import torch

import ppaux.relay.gloo as gloo
import ppaux.relay.sglang as sglang
from ppaux.relay.channels import LoopbackChannel
from ppaux.relay.wire import TensorDict, recv_tensor_dict, send_tensor_dict


@dataclass(frozen=True)
class ChannelKind:
    """What a channel name stands for: where the ranks run (``in_process``: threads of this
    process, else gloo worker processes) and whose wire code moves the dict (``wire``:
    ``"model"``, ppaux's send/recv_tensor_dict, or ``"sglang"``, SGLang's own)."""

    name: str
    in_process: bool
    wire: str


_KINDS = (
    ChannelKind("loopback", True, "model"),
    ChannelKind("gloo", False, "model"),
    ChannelKind("sglang", False, "sglang"),
)
CHANNELS = tuple(kind.name for kind in _KINDS)


def channel_kind(channel: object) -> ChannelKind:
    """The :class:`ChannelKind` named ``channel``; ``ValueError`` naming :data:`CHANNELS` for any other."""
    for kind in _KINDS:
        if kind.name == channel:
            return kind
    raise ValueError(f"channel={channel!r} must be one of {CHANNELS!r}")


def relay(
    tensor_dict: TensorDict, *, channel: str = "loopback", device: torch.device | str | None = None
) -> TensorDict:
    """The dict the next stage receives after one hop of send/recv_tensor_dict over ``channel``.

    ``channel`` is ``"loopback"`` (in process), ``"gloo"`` (a long-lived pair of gloo
    processes on 127.0.0.1, started on first use and stopped at interpreter exit, see
    :mod:`ppaux.relay.gloo`) or ``"sglang"`` (the same over SGLang's own wire code,
    :mod:`ppaux.relay.sglang`, which allocates on the receiver's current device). ``device`` is
    the receiver's own device (default: each tensor's device type, as SGLang). What the channel
    rejects is raised here (e.g. gloo's
    ``RuntimeError: input tensor has to be contiguous``); a hop that cannot complete raises
    :class:`ppaux.relay.channels.ChannelHang` instead of blocking.
    """
    kind = channel_kind(channel)
    if kind.in_process:
        loop = LoopbackChannel()
        send_tensor_dict(loop, tensor_dict)
        return recv_tensor_dict(loop, device=device)
    if kind.wire == "sglang":
        return sglang.relay(tensor_dict)
    return gloo.relay(tensor_dict, device=device)
