"""ppaux: reference PP auxiliary-output transport and its conformance suite.

The top level is the contract core (:mod:`ppaux.core`); the relay simulator is
:mod:`ppaux.relay`, the test tooling :mod:`ppaux.testing` (the observer kit, the pytest plugin),
the shipped suite :mod:`ppaux.conformance` and the command line :mod:`ppaux.cli`.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import exports

if TYPE_CHECKING:
    from ppaux.core import (
        _OUTPUT_PREFIX,
        CATALOG,
        CLAUSES,
        AuxiliaryPPError,
        CatalogEntry,
        IntegrityTransport,
        PipelineParallelAuxiliaryOutput,
        PipelineParallelSamplingObserver,
        PPAuxTransport,
        add,
        add_auxiliary_output_to_pp_tensors,
        lookup,
        pop,
        pop_auxiliary_output_from_pp_tensors,
    )

__version__ = "0.2.0"

__all__ = [
    "CATALOG",
    "CLAUSES",
    "AuxiliaryPPError",
    "CatalogEntry",
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

# The core (and torch with it) is imported on the first use of one of its names.
__getattr__, __dir__ = exports(__name__, dict.fromkeys(__all__, "ppaux.core"))
