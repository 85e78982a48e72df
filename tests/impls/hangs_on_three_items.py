"""A planted hang: pop loops for ever, in pure Python, on three or more aux items; otherwise
ppaux's reference. A timer signal can interrupt it."""

from collections.abc import MutableMapping
from typing import Any

from ppaux.core.transport import (  # noqa: F401 - the names an implementation must provide
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
)
from ppaux.core.transport import pop_auxiliary_output_from_pp_tensors as _reference_pop


def pop_auxiliary_output_from_pp_tensors(tensors: MutableMapping[Any, Any], observer: Any) -> Any:
    aux = [k for k in tensors if isinstance(k, str) and k.startswith(_OUTPUT_PREFIX)]
    while len(aux) >= 3:
        aux = aux[1:] + aux[:1]
    return _reference_pop(tensors, observer)
