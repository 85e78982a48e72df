"""ppaux: reference PP auxiliary-output transport and its conformance suite."""

from ppaux.errors import CATALOG, AuxiliaryPPError, CatalogEntry
from ppaux.transport import (
    _OUTPUT_PREFIX,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    PPAuxTransport,
    add,
    add_auxiliary_output_to_pp_tensors,
    pop,
    pop_auxiliary_output_from_pp_tensors,
)

__version__ = "0.1.0"

__all__ = [
    "CATALOG",
    "AuxiliaryPPError",
    "CatalogEntry",
    "PPAuxTransport",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "_OUTPUT_PREFIX",
    "add",
    "add_auxiliary_output_to_pp_tensors",
    "pop",
    "pop_auxiliary_output_from_pp_tensors",
]
