"""Public Hypothesis strategies for SGLang's PP auxiliary-output transport.

Import name ``ppaux_strategies`` (shipped by the ``ppaux`` distribution; the source
lives under ``strategies/``). Every strategy takes keyword-only options, validates them
up front with :class:`hypothesis.errors.InvalidArgument`, and says how it shrinks.
They depend on the contract core only; strategies of relay faults are :mod:`ppaux.relay.strategies`.
"""

from ppaux_strategies.doubles import (
    NotPPObserver,
    NotPPOutput,
    ObserverFailure,
    PPOutput,
    RaisingPPOutput,
    Rebuilt,
    RecordingObserver,
)
from ppaux_strategies.keys import SGLANG_PREFIX, aux_names, near_prefix_keys, prefixes, transport_dicts
from ppaux_strategies.outputs import aux_outputs, aux_payloads, observers
from ppaux_strategies.scope import (
    SCOPES,
    Scope,
    Swarm,
    active_scope,
    active_swarm,
    bound,
    parse_scope,
    parse_swarm,
    use_scope,
)
from ppaux_strategies.tensors import (
    CONTIGUOUS_VIEWS,
    MAX_DRAWN_ELEMENTS,
    devices,
    dtypes,
    shapes,
    tensors,
    tensors_equal,
    visible_devices,
)

__all__ = [
    "CONTIGUOUS_VIEWS",
    "MAX_DRAWN_ELEMENTS",
    "SCOPES",
    "SGLANG_PREFIX",
    "NotPPObserver",
    "NotPPOutput",
    "ObserverFailure",
    "PPOutput",
    "RaisingPPOutput",
    "Rebuilt",
    "RecordingObserver",
    "Scope",
    "Swarm",
    "active_scope",
    "active_swarm",
    "aux_names",
    "aux_outputs",
    "aux_payloads",
    "bound",
    "devices",
    "dtypes",
    "near_prefix_keys",
    "observers",
    "parse_scope",
    "parse_swarm",
    "prefixes",
    "shapes",
    "tensors",
    "tensors_equal",
    "transport_dicts",
    "use_scope",
    "visible_devices",
]
