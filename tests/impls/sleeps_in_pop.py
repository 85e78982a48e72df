"""Slow and correct: ppaux's reference, with pop taking 3 s whenever the dict holds an aux item,
within the default per-call limit. A fuzz round stopped by its budget finds it mid-test."""

import time
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
    if any(isinstance(k, str) and k.startswith(_OUTPUT_PREFIX) for k in tensors):
        time.sleep(3)
    return _reference_pop(tensors, observer)
