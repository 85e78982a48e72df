"""A planted bug for the binding tests: add writes each key as soon as its item passes (as SGLang
0.5.23 does), so a bad later item leaves the earlier keys behind. Otherwise ppaux's reference."""

from collections.abc import MutableMapping
from typing import Any

import torch

from ppaux.core.errors import AuxiliaryPPError
from ppaux.core.transport import (  # noqa: F401 - the names an implementation must provide
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    pop_auxiliary_output_from_pp_tensors,
)


def add_auxiliary_output_to_pp_tensors(tensors: MutableMapping[Any, Any], output: Any) -> None:
    if output is None:
        return
    if not isinstance(output, PipelineParallelAuxiliaryOutput):
        raise AuxiliaryPPError("A1")
    payload = output.to_pp_tensors()
    if not payload:
        raise AuxiliaryPPError("A2")
    for name, tensor in payload.items():
        if not isinstance(name, str) or not name:
            raise AuxiliaryPPError("A3")
        if not torch.is_tensor(tensor):
            raise AuxiliaryPPError("A4", name)
        if _OUTPUT_PREFIX + name in tensors:
            raise AuxiliaryPPError("A5", name)
        tensors[_OUTPUT_PREFIX + name] = tensor
