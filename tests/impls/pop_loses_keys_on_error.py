"""A planted bug for the counterexample tests: pop takes the aux keys out before it calls the
observer, so when the observer raises they are lost. Otherwise ppaux's reference."""

from collections.abc import MutableMapping
from typing import Any

import torch

from ppaux.core.errors import AuxiliaryPPError
from ppaux.core.transport import (  # noqa: F401 - the names an implementation must provide
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
)


def pop_auxiliary_output_from_pp_tensors(tensors: MutableMapping[Any, Any], observer: Any) -> Any:
    keys = [k for k in tensors if isinstance(k, str) and k.startswith(_OUTPUT_PREFIX)]
    if not keys:
        return None
    if observer is None:
        raise AuxiliaryPPError("P1")
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise AuxiliaryPPError("P2")
    if not all(torch.is_tensor(tensors[k]) for k in keys):
        raise AuxiliaryPPError("P3")
    received = {k[len(_OUTPUT_PREFIX) :]: tensors.pop(k) for k in keys}
    output = observer.from_pp_tensors(received)
    if output is None:
        raise AuxiliaryPPError("P4")
    return output
