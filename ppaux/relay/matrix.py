"""The fault matrix: every named fault through a real PP ring, judged at the popping stage.

The scenario: three stages (first pops, one middle, last samples), two steps each with a
two-tensor auxiliary output, the fault aimed at step 0's first aux tensor on the last -> first
hop; ``diverge`` runs on two stages of two all-gather ranks each. ``ppaux faults``
(:mod:`ppaux.cli.faults`) prints the matrix and writes it as Markdown and JSON (its typed report:
:class:`ppaux.report.FaultsReport`); the exit status is 1 when a cell differs from
:data:`EXPECTED`, the outcomes the test suite asserts.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

import ppaux.relay.gloo as gloo
from ppaux.relay.faults import FAULTS, OUTCOMES, Fault, Verdict, classify
from ppaux.relay.hop import CHANNELS
from ppaux.relay.pipeline import PipelineConfig, Stage
from ppaux.relay.pipeline import run as run_pipeline

D, X, H, S, OK = OUTCOMES

# (channel, integrity) -> fault -> outcome; the loopback models gloo, so both expect the same.
_SGLANG_WIRE = {
    "none": OK,
    "drop_key": S,
    "duplicate_key": OK,
    "rename_key": S,
    "bit_flip": S,
    "truncate": S,
    "change_dtype": S,
    "change_shape": S,
    "move_device": X,
    "reorder": S,
    "lose_message": H,
    "delay": OK,
    "non_contiguous": X,
    "diverge": S,
    "kill_mid_send": X,
}
_INTEGRITY = {
    "none": OK,
    "drop_key": D,
    "duplicate_key": OK,
    "rename_key": D,
    "bit_flip": D,
    "truncate": D,
    "change_dtype": D,
    "change_shape": D,
    "move_device": X,
    "reorder": D,
    "lose_message": D,
    "delay": OK,
    "non_contiguous": D,
    "diverge": D,
    "kill_mid_send": X,
}
EXPECTED: dict[tuple[str, bool], dict[str, str]] = {(channel, False): _SGLANG_WIRE for channel in CHANNELS}
EXPECTED.update({(channel, True): _INTEGRITY for channel in CHANNELS})


class Rebuilt:
    """What the scenario's first-stage observer returns: any object but ``None``, which pop
    would report as a lost output. The tensors the observer got are judged, not this."""


class Observer:
    """The scenario's first-stage observer: PP-capable, rebuilds from any tensors."""

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Rebuilt:
        return Rebuilt()


def scenario(name: str, integrity: bool) -> PipelineConfig:
    # Any values serve as long as every tensor differs between the two steps (a reordered step
    # must show); a test pins the names, dtypes, shapes and that difference.
    outputs = [
        {"scores": torch.arange(6.0).reshape(2, 3) / 4, "ids": torch.tensor([3, 4])},
        {"scores": torch.full((2, 3), 0.5), "ids": torch.tensor([5, 6])},
    ]
    if name == "diverge":
        return PipelineConfig([Stage(observer=Observer()), Stage()], outputs=outputs, ag_size=2, integrity=integrity)
    return PipelineConfig([Stage(observer=Observer()), Stage(), Stage()], outputs=outputs, integrity=integrity)


def run_fault(name: str, *, channel: str, integrity: bool, timeout: float) -> Verdict:
    fault = FAULTS[name]() if name in FAULTS else Fault()
    config = scenario(name, integrity)
    if channel == "gloo":
        # Fresh processes: a truncated message leaves receiver memory as it was, and memory
        # reused from an earlier run could hold the very bytes that were cut off.
        gloo.world(len(config.stages) * config.ag_size, ag_size=config.ag_size).stop()
    # The loopback detects a stuck ring itself; the watchdog timeout is for gloo's processes.
    return classify(
        run_pipeline(config, channel=channel, fault=fault, timeout=timeout if channel == "gloo" else None), config
    )


def matrix(*, channel: str, integrity: bool, timeout: float) -> dict[str, Verdict]:
    return {name: run_fault(name, channel=channel, integrity=integrity, timeout=timeout) for name in ["none", *FAULTS]}
