"""A planted crash: pop dies of SIGSEGV on the no-observer path (aux items, observer None), the way
a native extension does; otherwise ppaux's reference."""

import ctypes
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
    if observer is None and any(isinstance(k, str) and k.startswith(_OUTPUT_PREFIX) for k in tensors):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return _reference_pop(tensors, observer)
