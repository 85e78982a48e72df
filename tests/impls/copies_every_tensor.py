"""A planted broken implementation for the fuzz job's end-to-end tests: add stores a copy of every
tensor instead of the payload's own (add.7). Unlike ``broken_contiguous_copy`` (the fuzz demo,
which breaks only on a rare draw), every example with a tensor shows it, so a test that needs a
saved failure finds one in the first examples on any machine. Never import it outside tests."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ppaux.transport import (
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    PPAuxTransport,
    pop_auxiliary_output_from_pp_tensors,
)

__all__ = [
    "_OUTPUT_PREFIX",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "add_auxiliary_output_to_pp_tensors",
    "pop_auxiliary_output_from_pp_tensors",
]

_REFERENCE = PPAuxTransport(_OUTPUT_PREFIX)


class _Copied:
    def __init__(self, output: Any) -> None:
        self._output = output

    def to_pp_tensors(self) -> Any:
        payload = self._output.to_pp_tensors()
        if isinstance(payload, dict):
            return {k: (v.clone() if hasattr(v, "clone") else v) for k, v in payload.items()}
        return payload


def add_auxiliary_output_to_pp_tensors(tensors: MutableMapping[Any, Any], output: Any) -> None:
    if output is not None and hasattr(output, "to_pp_tensors"):
        output = _Copied(output)
    _REFERENCE.add(tensors, output)
