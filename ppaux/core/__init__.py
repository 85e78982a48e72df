"""The contract core: the reference transport, the error catalog, the contract's clauses and
integrity mode. It imports nothing else of ppaux."""

from ppaux.core.clauses import CLAUSES, Clause
from ppaux.core.errors import CATALOG, AuxiliaryPPError, CatalogEntry, lookup
from ppaux.core.integrity import IntegrityTransport
from ppaux.core.transport import (
    _OUTPUT_PREFIX,
    SGLANG_TRANSPORT,
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    PPAuxTransport,
    add,
    add_auxiliary_output_to_pp_tensors,
    pop,
    pop_auxiliary_output_from_pp_tensors,
)

__all__ = [
    "CATALOG",
    "CLAUSES",
    "SGLANG_TRANSPORT",
    "AuxiliaryPPError",
    "CatalogEntry",
    "Clause",
    "IntegrityTransport",
    "PPAuxTransport",
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "_OUTPUT_PREFIX",
    "add",
    "add_auxiliary_output_to_pp_tensors",
    "lookup",
    "pop",
    "pop_auxiliary_output_from_pp_tensors",
]
