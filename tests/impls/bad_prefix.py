"""An implementation module whose prefix is not a non-empty str."""

from ppaux.transport import (  # noqa: F401
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)

_OUTPUT_PREFIX = ""
