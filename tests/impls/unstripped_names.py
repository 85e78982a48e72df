"""A broken implementation for the suite's own tests: pop hands the observer whole keys, prefix included."""

from ppaux.transport import (  # noqa: F401 - the names an implementation must provide
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
)
from ppaux.transport import pop_auxiliary_output_from_pp_tensors as _pop


def pop_auxiliary_output_from_pp_tensors(tensors, observer):
    class _Unstripping:
        def from_pp_tensors(self, received):
            return observer.from_pp_tensors({_OUTPUT_PREFIX + k: v for k, v in received.items()})

    if observer is None or not hasattr(observer, "from_pp_tensors"):
        return _pop(tensors, observer)
    return _pop(tensors, _Unstripping())
