"""A planted bug for the binding tests: pop deletes the keys named by the dict it handed the
observer, after the observer ran (as SGLang 0.5.23 does). Otherwise ppaux's reference."""

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
    received = {
        k[len(_OUTPUT_PREFIX) :]: v for k, v in tensors.items() if isinstance(k, str) and k.startswith(_OUTPUT_PREFIX)
    }
    if not received:
        return None
    if observer is None:
        raise AuxiliaryPPError("P1")
    if not isinstance(observer, PipelineParallelSamplingObserver):
        raise AuxiliaryPPError("P2")
    if not all(torch.is_tensor(v) for v in received.values()):
        raise AuxiliaryPPError("P3")
    output = observer.from_pp_tensors(received)
    if output is None:
        raise AuxiliaryPPError("P4")
    for name in received:
        del tensors[_OUTPUT_PREFIX + name]
    return output
