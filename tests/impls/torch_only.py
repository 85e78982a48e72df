"""A transport that imports nothing but torch, with two of SGLang 0.5.23's differences: add writes
each key as soon as its item passes (add.6) and pop reads every key as a str (pop.1). The
regression tests written for it must run where neither ppaux nor Hypothesis is installed."""

from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol, runtime_checkable

import torch

_OUTPUT_PREFIX = "__sampling_observer_output__."


@runtime_checkable
class PipelineParallelAuxiliaryOutput(Protocol):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]: ...


@runtime_checkable
class PipelineParallelSamplingObserver(Protocol):
    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Any: ...


def add_auxiliary_output_to_pp_tensors(tensors: MutableMapping[Any, Any], output: Any) -> None:
    if output is None:
        return
    if not isinstance(output, PipelineParallelAuxiliaryOutput):
        raise RuntimeError("auxiliary output does not support pipeline-parallel transport")
    payload = output.to_pp_tensors()
    if not payload:
        raise RuntimeError("auxiliary PP output must contain at least one tensor")
    for name, tensor in payload.items():
        if not isinstance(name, str) or not name:
            raise RuntimeError("auxiliary PP tensor names must be non-empty strings")
        if not torch.is_tensor(tensor):
            raise RuntimeError(f"auxiliary PP output {name!r} is not a tensor")
        if _OUTPUT_PREFIX + name in tensors:
            raise RuntimeError(f"duplicate auxiliary PP tensor {name!r}")
        tensors[_OUTPUT_PREFIX + name] = tensor


def pop_auxiliary_output_from_pp_tensors(tensors: MutableMapping[Any, Any], observer: Any) -> Any:
    aux_keys = [key for key in tensors if key.startswith(_OUTPUT_PREFIX)]
    if not aux_keys:
        return None
    if observer is None:
        raise RuntimeError("received auxiliary PP output without a sampling observer")
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise RuntimeError("sampling observer does not support pipeline-parallel transport")
    received = {key[len(_OUTPUT_PREFIX) :]: tensors[key] for key in aux_keys}
    if not all(torch.is_tensor(value) for value in received.values()):
        raise RuntimeError("received a non-tensor auxiliary PP output")
    output = observer.from_pp_tensors(received)
    if output is None:
        raise RuntimeError("sampling observer did not reconstruct its PP output")
    for key in aux_keys:
        del tensors[key]
    return output
