"""The drop-in for ``sglang.srt.sampling.sampling_observer_pp``: SGLang's five names, bound to
ppaux's reference transport (:mod:`ppaux.core.transport`). ``ppaux check`` tests this module by default."""

from ppaux.core.transport import (
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    PPAuxTransport,
    add,
    add_auxiliary_output_to_pp_tensors,
    pop,
    pop_auxiliary_output_from_pp_tensors,
)

__all__ = [
    "_OUTPUT_PREFIX",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "add_auxiliary_output_to_pp_tensors",
    "pop_auxiliary_output_from_pp_tensors",
    # ppaux's own additions: the short names and the transport for any prefix.
    "PPAuxTransport",
    "add",
    "pop",
]
