"""Reserved prefixes, aux names and PP output dicts shaped like SGLang's."""

from __future__ import annotations

import functools
from typing import Any

import torch
from hypothesis import strategies as st

from ppaux_strategies.scope import active_scope, active_swarm, bound, counted
from ppaux_strategies.tensors import tensors as tensors_st
from ppaux_strategies.validation import check_prefix, check_range, check_type

SGLANG_PREFIX = "__sampling_observer_output__."

# Prefixes with a hazard of their own; "next_" is itself a prefix of SGLang's ordinary keys.
NOTABLE_PREFIXES = (SGLANG_PREFIX, "aux.", "a", "__aux__", "..", "é.", "next_", " ")

# Keys the last stage writes next to the aux keys (scheduler_pp_mixin / managers.utils).
SGLANG_TENSOR_KEYS = (
    "next_token_logprobs",
    "next_token_top_logprobs_val",
    "next_token_top_logprobs_idx",
    "spec_accept_lens",
    "draft_topk_p",
)
SGLANG_LIST_KEYS = ("extend_input_len_per_req", "extend_logprob_start_len_per_req")
MSG_TYPES = ("default", "batch_result", "pp_output")

# What UTF-8 encodes, the characters Hypothesis's text() and from_regex() draw from by default: all but
# the surrogates. Said as their default says it (codec="utf-8"), Hypothesis scans all of Unicode, about
# 3 s, on the first run in each directory: every `ppaux check` from a fresh clone or directory.
_UTF8 = st.characters(exclude_categories=["Cs"])


def prefixes(*, sglang_only: bool = False) -> st.SearchStrategy[str]:
    """Draw a reserved key prefix: SGLang's, one of a few notable ones, or random text
    (dots and unicode included).

    Shrinks towards SGLang's prefix.
    """
    check_type(bool, sglang_only, "sglang_only")
    return _prefixes(sglang_only)


@functools.cache
def _prefixes(sglang_only: bool) -> st.SearchStrategy[str]:
    if sglang_only:
        return st.just(SGLANG_PREFIX)
    random = st.text(_UTF8, min_size=1, max_size=8).map(lambda s: s + ".") | st.text(_UTF8, min_size=1, max_size=6)
    return st.one_of(st.sampled_from(NOTABLE_PREFIXES), random)


def aux_names(*, prefix: str = SGLANG_PREFIX) -> st.SearchStrategy[str]:
    """Draw a valid aux tensor name: any non-empty ``str``, including unicode, dots,
    whitespace, and names that contain or resemble ``prefix``.

    Shrinks towards short ASCII names.
    """
    check_prefix(prefix)
    swarm = active_swarm()
    return _aux_names(prefix, None if swarm is None else swarm.names)


@functools.lru_cache(maxsize=256)
def _aux_names(prefix: str, kinds: tuple[str, ...] | None = None) -> st.SearchStrategy[str]:
    tricky = st.sampled_from(
        ["scores", "top.k", " ", "é", "a b", prefix, prefix + "x", "x" + prefix, prefix.rstrip(".") or "p"]
    )
    if kinds is None or set(kinds) >= {"plain", "tricky"}:
        return st.one_of(st.text(_UTF8, min_size=1, max_size=6), tricky)
    if "tricky" in kinds:
        # Unicode, dots, whitespace and the prefix itself: names that trip a parser of keys.
        unicode = st.characters(min_codepoint=0x80, exclude_categories=["Cs"])
        return st.one_of(tricky, st.text(unicode, min_size=1, max_size=6))
    # Names as a plugin author writes them: ASCII identifiers, many of them distinct.
    return st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True, alphabet=_UTF8)


def near_prefix_keys(prefix: str) -> tuple[str, ...]:
    """Ordinary keys that only resemble ``prefix``: no trailing dot, other case, the prefix mid-key."""
    check_prefix(prefix)
    candidates = {prefix[:-1], prefix.upper(), prefix.lower(), prefix.swapcase(), "x" + prefix, "next_" + prefix}
    return tuple(sorted(k for k in candidates if k and not k.startswith(prefix)))


NON_STR_KEYS = st.lists(
    st.one_of(st.integers(-3, 3), st.tuples(st.integers(0, 2)), st.none()), min_size=1, max_size=2, unique=True
)
MSG_TYPE_VALUES = st.sampled_from(MSG_TYPES)


# Module level: Hypothesis reads a composite's source when it is decorated, milliseconds each, and
# _transport_dicts builds one per prefix drawn.
@st.composite
def _transport_dict(
    draw: st.DrawFn,
    base: str,
    tensors: st.SearchStrategy[torch.Tensor],
    extras_st: st.SearchStrategy[Any],
    ordinary_value: st.SearchStrategy[Any],
    prefix: str,
    aux: bool,
    aux_names_st: st.SearchStrategy[list[str]],
    non_str_keys: bool,
) -> dict[Any, Any]:
    items: list[tuple[Any, Any]] = [(base, draw(tensors))]
    extras = draw(extras_st)
    items += [(k, draw(ordinary_value)) for k in extras if not k.startswith(prefix)]
    # A prefix like "_" would claim SGLang's "__msg_type__" too: left out then, as the extras are.
    if not "__msg_type__".startswith(prefix) and draw(st.booleans()):
        items.append(("__msg_type__", draw(MSG_TYPE_VALUES)))
    if aux:
        items += [(prefix + n, draw(tensors)) for n in draw(aux_names_st)]
    if non_str_keys:
        items += [(k, draw(tensors)) for k in draw(NON_STR_KEYS)]
    order = draw(st.permutations(range(len(items))))
    return dict(items[i] for i in order)


# The tests build the same dicts strategy in every example, for that example's prefix: built once,
# a strategy is validated once, and validating a tree of them costs more than drawing from it.
@functools.lru_cache(maxsize=256)
def _transport_dicts(
    prefix: str,
    tensors: st.SearchStrategy[torch.Tensor],
    max_extra: int,
    aux: bool,
    non_str_keys: bool,
    max_aux: int,
    uniform: bool,
    names: st.SearchStrategy[str],
) -> st.SearchStrategy[dict[Any, Any]]:
    # A prefix like "next_" would claim SGLang's own key; fall back to another first letter.
    base = next(k for k in ("next_token_ids", "hidden_states", "logits") if not k.startswith(prefix))
    extra_keys = SGLANG_TENSOR_KEYS + SGLANG_LIST_KEYS + near_prefix_keys(prefix)
    # Past SGLang's own keys, per-request ones (as a batch of many requests carries): a pool as large as asked.
    extra_keys += tuple(f"req{i}.logprobs" for i in range(max(0, max_extra - len(extra_keys))))
    if uniform:
        # A count, then the pool's keys in a drawn order: the count shrinks freely (the order's choices do not
        # depend on it), to the fewest keys that fail; a unique list of sampled keys would not shrink below
        # the floor it was drawn with.
        extras_st = st.tuples(st.integers(0, max_extra), st.permutations(extra_keys)).map(lambda t: t[1][: t[0]])
    else:
        extras_st = st.lists(st.sampled_from(extra_keys), max_size=max_extra, unique=True)
    ordinary_value = st.one_of(tensors, st.none(), st.lists(st.integers(0, 9), max_size=3))
    aux_names_st = counted(names, 1, max_aux, uniform=uniform, unique=True)

    return _transport_dict(base, tensors, extras_st, ordinary_value, prefix, aux, aux_names_st, non_str_keys)


def transport_dicts(
    *,
    prefix: str = SGLANG_PREFIX,
    tensors: st.SearchStrategy[torch.Tensor] | None = None,
    max_extra: int | None = None,
    aux: bool = False,
    non_str_keys: bool = False,
    max_aux: int | None = None,
) -> st.SearchStrategy[dict[Any, Any]]:
    """Draw a PP output dict like SGLang's last stage builds: ``next_token_ids``, optional
    logprob/speculative keys (tensors, lists or ``None``), optional ``__msg_type__`` with
    a ``str`` value, and ordinary keys near ``prefix`` (no trailing dot, other case, the
    prefix mid-key) in any order.

    At most ``max_extra`` ordinary keys besides the base one (past SGLang's own, ``req{i}.logprobs``
    keys); ``aux=True`` adds 1 to ``max_aux`` keys that already carry ``prefix`` (as a dict in flight
    would); ``non_str_keys=True`` adds keys that are not ``str``. Without ``aux`` no key
    starts with ``prefix``. Both bounds and the tensors' rank and side default to the active scope's
    (``small``: 3 extra keys, 2 aux keys, rank 2, side 3; see :class:`~ppaux_strategies.Scope`).

    Shrinks towards ``{"next_token_ids": tensor(0.)}``.
    """
    check_prefix(prefix)
    max_extra = bound("max_extra") if max_extra is None else max_extra
    max_aux = bound("max_aux") if max_aux is None else max_aux
    check_range(max_extra, "max_extra", low=0, high=256)
    check_range(max_aux, "max_aux", low=1, high=256)
    check_type(bool, aux, "aux")
    check_type(bool, non_str_keys, "non_str_keys")
    if tensors is None:
        tensors = tensors_st(max_dims=bound("item_max_dims"), max_side=bound("item_max_side"))
    check_type(st.SearchStrategy, tensors, "tensors")
    names = aux_names(prefix=prefix)
    return _transport_dicts(prefix, tensors, max_extra, aux, non_str_keys, max_aux, active_scope().uniform_sizes, names)
