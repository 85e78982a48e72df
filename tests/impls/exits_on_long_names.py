"""A planted crash: add ends the process with os._exit(3) when an aux name is two characters or
longer; otherwise ppaux's reference."""

import os
from collections.abc import MutableMapping
from typing import Any

from ppaux.core.transport import (  # noqa: F401 - the names an implementation must provide
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    pop_auxiliary_output_from_pp_tensors,
)
from ppaux.core.transport import add_auxiliary_output_to_pp_tensors as _reference_add


def add_auxiliary_output_to_pp_tensors(tensors: MutableMapping[Any, Any], output: Any) -> None:
    payload = getattr(output, "payload", None)
    if isinstance(payload, dict) and any(isinstance(name, str) and len(name) >= 2 for name in payload):
        os._exit(3)
    _reference_add(tensors, output)
