"""A planted broken implementation for the fuzz demo
(``python -m fuzz run --impl tests/impls/broken_contiguous_copy.py``).

It is ppaux's transport except for one subtle bug, the kind a relay "fix" introduces: when an
output carries three or more tensors, add stores ``tensor.contiguous()`` instead of the tensor.
That is the very same object for contiguous tensors, so only examples with >= 3 tensors of
which one is a non-contiguous view break the contract (add.7: the dict holds the payload's own
tensor objects). Never import it outside tests.
"""

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


class _Contiguous:
    def __init__(self, output: Any) -> None:
        self._output = output

    def to_pp_tensors(self) -> Any:
        payload = self._output.to_pp_tensors()
        if isinstance(payload, dict) and len(payload) >= 3:
            return {k: (v.contiguous() if hasattr(v, "contiguous") else v) for k, v in payload.items()}
        return payload


def add_auxiliary_output_to_pp_tensors(tensors: MutableMapping[Any, Any], output: Any) -> None:
    if output is not None and hasattr(output, "to_pp_tensors"):
        output = _Contiguous(output)
    _REFERENCE.add(tensors, output)
