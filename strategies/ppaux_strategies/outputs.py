"""Aux payloads, auxiliary outputs and sampling observers, valid and malformed."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Literal, overload

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ppaux_strategies.doubles import (
    OBSERVER_MODES,
    NotPPObserver,
    NotPPOutput,
    PPOutput,
    RaisingPPOutput,
    RecordingObserver,
)
from ppaux_strategies.keys import SGLANG_PREFIX, aux_names
from ppaux_strategies.scope import active_scope, active_swarm, bound, counted
from ppaux_strategies.tensors import tensors as tensors_st
from ppaux_strategies.validation import check_order, check_prefix, check_range, check_type

# Values torch.is_tensor rejects, each a plausible plugin slip.
NON_TENSORS = st.sampled_from([None, 0, 1.5, "tensor", [0.0], (1,)])
BAD_NAMES = st.sampled_from(["", 0, None, b"name", ("a",)])


def _checked(prefix: str, min_size: int, max_size: int, tensors: st.SearchStrategy | None) -> st.SearchStrategy:
    check_prefix(prefix)
    check_range(min_size, "min_size", low=1, high=64)
    check_range(max_size, "max_size", low=1, high=64)
    check_order(min_size, max_size, "min_size", "max_size")
    if tensors is None:
        return tensors_st(max_dims=bound("item_max_dims"), max_side=bound("item_max_side"))
    check_type(st.SearchStrategy, tensors, "tensors")
    return tensors


def _taken_names(prefix: str, collide_with: Mapping[Any, object] | None) -> tuple[str, ...]:
    """Names whose reserved key is already in the PP dict ``collide_with``."""
    return tuple(
        k[len(prefix) :]
        for k in collide_with or ()
        if isinstance(k, str) and k.startswith(prefix) and len(k) > len(prefix)
    )


def _malformed_payload(
    prefix: str,
    max_size: int,
    tensors: st.SearchStrategy,
    taken: tuple[str, ...],
    kinds: tuple[str, ...] | None,
    uniform: bool,
) -> st.SearchStrategy[dict[object, object]]:
    """Valid items, then one defective item, then any items: every draw has a defect, and the
    valid items before it show whether add wrote anything before refusing."""
    names = aux_names(prefix=prefix)
    defects = {
        "bad_name": st.tuples(BAD_NAMES, st.one_of(tensors, NON_TENSORS)),
        "non_tensor": st.tuples(names, NON_TENSORS),
    }
    if taken:
        # Names whose reserved key is already in the dict: A5 on add.
        defects["collision"] = st.tuples(st.sampled_from(taken), tensors)
    # A swarm configuration keeps some kinds of defect only (all of them, where none it keeps applies).
    defect = st.one_of([d for kind, d in defects.items() if kinds is None or kind in kinds] or list(defects.values()))
    valid = counted(st.tuples(names, tensors), 0, max_size - 1, uniform=uniform, unique_by=lambda item: item[0])
    anything = st.tuples(st.one_of(names, BAD_NAMES), st.one_of(tensors, NON_TENSORS))

    @st.composite
    def payload(draw: st.DrawFn) -> dict[object, object]:
        out: dict[object, object] = dict(draw(valid))
        name, value = draw(defect)
        # The defect always lands (replacing a valid item of the same name); later items never undo it.
        out[name] = value
        for name, value in draw(st.lists(anything, max_size=max_size - len(out))):
            out.setdefault(name, value)
        return out

    return payload()


# Typed by ``valid``: a valid payload is a dict of names to tensors, a malformed one anything add must refuse.
@overload
def aux_payloads(
    *,
    prefix: str = ...,
    valid: Literal[True] = ...,
    min_size: int = ...,
    max_size: int | None = ...,
    tensors: st.SearchStrategy[torch.Tensor] | None = ...,
    collide_with: Mapping[Any, object] | None = ...,
) -> st.SearchStrategy[dict[str, torch.Tensor]]: ...
@overload
def aux_payloads(
    *,
    prefix: str = ...,
    valid: bool,
    min_size: int = ...,
    max_size: int | None = ...,
    tensors: st.SearchStrategy[torch.Tensor] | None = ...,
    collide_with: Mapping[Any, object] | None = ...,
) -> st.SearchStrategy[dict[Any, Any] | None]: ...
def aux_payloads(
    *,
    prefix: str = SGLANG_PREFIX,
    valid: bool = True,
    min_size: int = 1,
    max_size: int | None = None,
    tensors: st.SearchStrategy[torch.Tensor] | None = None,
    collide_with: Mapping[Any, object] | None = None,
) -> st.SearchStrategy[dict[Any, Any] | None]:
    """Draw what ``to_pp_tensors()`` returns.

    ``valid=True``: a dict of ``min_size`` to ``max_size`` distinct non-empty ``str``
    names (see :func:`aux_names`) to tensors. ``valid=False``: also ``{}``, ``None``, and
    payloads of at most ``max_size`` items with a defect after zero or more valid items (a
    non-``str`` or empty name, a non-tensor value or, given ``collide_with`` (a PP dict), a
    name whose reserved key is already in it), then any items: precedence shows, and so does
    whatever add wrote before it refused.

    ``max_size`` and the tensors' rank and side default to the active scope's (``small``: 3 items,
    rank 2, side 3; see :class:`~ppaux_strategies.Scope`).

    Shrinks towards one short name bound to a small zero tensor (``valid=False``: towards ``{}``).
    """
    max_size = bound("max_payload") if max_size is None else max_size
    tensors = _checked(prefix, min_size, max_size, tensors)
    check_type(bool, valid, "valid")
    if collide_with is not None and not isinstance(collide_with, Mapping):
        raise InvalidArgument(f"collide_with={collide_with!r} must be a mapping (a PP dict)")
    swarm = active_swarm()
    return _aux_payloads(
        prefix,
        valid,
        min_size,
        max_size,
        tensors,
        _taken_names(prefix, collide_with) if not valid else (),
        None if swarm is None else swarm.defects,
        active_scope().uniform_sizes,
        aux_names(prefix=prefix),
    )


# Tests build these in every example, for its prefix and dict: built once, a strategy is validated once.
@functools.lru_cache(maxsize=256)
def _aux_payloads(
    prefix: str,
    valid: bool,
    min_size: int,
    max_size: int,
    tensors: st.SearchStrategy,
    taken: tuple[str, ...],
    defects: tuple[str, ...] | None,
    uniform: bool,
    names: st.SearchStrategy[str],
) -> st.SearchStrategy[dict[Any, Any] | None]:
    if uniform:
        # Names first, as the dicts' aux names are drawn (their count shrinks to the threshold), then a tensor each.
        good = counted(names, min_size, max_size, uniform=True, unique=True).flatmap(
            lambda ns: st.tuples(*(tensors for _ in ns)).map(lambda ts: dict(zip(ns, ts)))
        )
    else:
        good = st.dictionaries(names, tensors, min_size=min_size, max_size=max_size)
    if valid:
        return good
    return st.one_of(
        st.just({}), st.none(), _malformed_payload(prefix, max_size, tensors, taken, defects, uniform), good
    )


# Typed by ``valid`` and ``allow_none``: by default every drawn output is a PPOutput.
@overload
def aux_outputs(
    *,
    prefix: str = ...,
    valid: Literal[True] = ...,
    allow_none: Literal[False] = ...,
    min_size: int = ...,
    max_size: int | None = ...,
    tensors: st.SearchStrategy[torch.Tensor] | None = ...,
    collide_with: Mapping[Any, object] | None = ...,
) -> st.SearchStrategy[PPOutput]: ...
@overload
def aux_outputs(
    *,
    prefix: str = ...,
    valid: bool = ...,
    allow_none: bool = ...,
    min_size: int = ...,
    max_size: int | None = ...,
    tensors: st.SearchStrategy[torch.Tensor] | None = ...,
    collide_with: Mapping[Any, object] | None = ...,
) -> st.SearchStrategy[PPOutput | NotPPOutput | RaisingPPOutput | None]: ...
def aux_outputs(
    *,
    prefix: str = SGLANG_PREFIX,
    valid: bool = True,
    allow_none: bool = False,
    min_size: int = 1,
    max_size: int | None = None,
    tensors: st.SearchStrategy[torch.Tensor] | None = None,
    collide_with: Mapping[Any, object] | None = None,
) -> st.SearchStrategy[PPOutput | NotPPOutput | RaisingPPOutput | None]:
    """Draw an auxiliary output for add.

    ``valid=True``: a :class:`PPOutput` over a valid payload (``None`` too if
    ``allow_none``). ``valid=False``: also outputs that are not PP-capable, whose
    ``to_pp_tensors`` raises, or whose payload is malformed (see :func:`aux_payloads`).

    Shrinks towards a valid one-tensor output.
    """
    check_type(bool, allow_none, "allow_none")
    return _aux_outputs(
        aux_payloads(
            prefix=prefix, valid=valid, min_size=min_size, max_size=max_size, tensors=tensors, collide_with=collide_with
        ),
        valid,
        allow_none,
    )


@functools.lru_cache(maxsize=256)
def _aux_outputs(
    payloads: st.SearchStrategy[object], valid: bool, allow_none: bool
) -> st.SearchStrategy[PPOutput | NotPPOutput | RaisingPPOutput | None]:
    outputs = payloads.map(PPOutput)
    if not valid:
        outputs = st.one_of(outputs, st.builds(NotPPOutput), st.builds(RaisingPPOutput))
    return st.one_of(st.none(), outputs) if allow_none else outputs


def observers(
    *, modes: Sequence[str] = OBSERVER_MODES, allow_none: bool = True, allow_not_pp: bool = True
) -> st.SearchStrategy[RecordingObserver | NotPPObserver | None]:
    """Draw a sampling observer for pop: ``None`` (``allow_none``), one that is not
    PP-capable (``allow_not_pp``), or a :class:`RecordingObserver` in one of ``modes``
    (rebuild, return ``None``, raise, or mutate the dict it is given).

    Shrinks towards a recording observer that rebuilds.
    """
    check_type(bool, allow_none, "allow_none")
    check_type(bool, allow_not_pp, "allow_not_pp")
    modes = tuple(modes)
    if not modes or any(m not in OBSERVER_MODES for m in modes):
        raise InvalidArgument(f"modes={modes!r} must be a non-empty selection of {OBSERVER_MODES!r}")
    return _observers(modes, allow_none, allow_not_pp)


@functools.cache
def _observers(
    modes: tuple[str, ...], allow_none: bool, allow_not_pp: bool
) -> st.SearchStrategy[RecordingObserver | NotPPObserver | None]:
    choices: list[st.SearchStrategy[RecordingObserver | NotPPObserver | None]] = [
        st.sampled_from(modes).map(RecordingObserver)
    ]
    if allow_none:
        choices.append(st.none())
    if allow_not_pp:
        choices.append(st.builds(NotPPObserver))
    return st.one_of(choices)
