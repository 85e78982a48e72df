"""A planted hang no signal handler can reach: on three or more aux items pop blocks every signal
and waits in a system call that never returns; otherwise ppaux's reference."""

import os
import signal
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
    if sum(isinstance(k, str) and k.startswith(_OUTPUT_PREFIX) for k in tensors) >= 3:
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
        read_end, _ = os.pipe()
        os.read(read_end, 1)  # nobody writes: blocks in the kernel for ever
    return _reference_pop(tensors, observer)
