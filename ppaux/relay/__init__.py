"""The relay simulator: SGLang's PP dict on the wire (:mod:`~ppaux.relay.wire`), over an
in-process loopback or real gloo processes (:mod:`~ppaux.relay.channels`, :mod:`~ppaux.relay.gloo`),
an N-stage ring (:mod:`~ppaux.relay.pipeline`), named wire faults (:mod:`~ppaux.relay.faults`),
the fault matrix (:mod:`~ppaux.relay.matrix`) and Hypothesis strategies of faults
(:mod:`~ppaux.relay.strategies`). It builds on :mod:`ppaux.core` only."""

from ppaux.relay.channels import ChannelHang, LoopbackChannel
from ppaux.relay.faults import FAULTS, Fault, Verdict, classify
from ppaux.relay.gloo import GlooWorld, RankFailure, stop_all
from ppaux.relay.hop import CHANNELS, ChannelKind, channel_kind, relay
from ppaux.relay.pipeline import PipelineConfig, Stage, check_wiring, run
from ppaux.relay.wire import TensorMetadata, recv_tensor_dict, send_tensor_dict

__all__ = [
    "CHANNELS",
    "FAULTS",
    "ChannelHang",
    "ChannelKind",
    "Fault",
    "GlooWorld",
    "LoopbackChannel",
    "PipelineConfig",
    "RankFailure",
    "Stage",
    "TensorMetadata",
    "Verdict",
    "channel_kind",
    "check_wiring",
    "classify",
    "recv_tensor_dict",
    "relay",
    "run",
    "send_tensor_dict",
    "stop_all",
]
