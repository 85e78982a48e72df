"""Devices, dtypes and tensors: everything add and pop must carry without reading it."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast, overload

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ppaux.core.tensors import tensor_bytes
from ppaux_strategies.scope import Swarm, active_scope, active_swarm, bound, counted
from ppaux_strategies.validation import check_order, check_range, check_type

# Ordered simplest first: Hypothesis shrinks sampled_from towards the front.
ALL_DTYPES: tuple[torch.dtype, ...] = tuple(
    dt
    for dt in (
        getattr(torch, name, None)
        for name in (
            "float32",
            "int64",
            "bool",
            "int32",
            "int16",
            "int8",
            "uint8",
            "float16",
            "bfloat16",
            "float64",
            "complex64",
            "complex128",
            "uint16",
            "uint32",
            "uint64",
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e4m3fnuz",
            "float8_e5m2fnuz",
        )
    )
    if isinstance(dt, torch.dtype)
)


def visible_devices(*, include_meta: bool = False) -> tuple[str, ...]:
    """``cpu``, each visible ``cuda:N``, and ``meta`` when asked: the placements a run can use."""
    found = ["cpu"]
    if torch.cuda.is_available():  # pragma: no cover - only on GPU machines
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if include_meta:
        found.append("meta")
    return tuple(found)


def devices(*, include_meta: bool = False) -> st.SearchStrategy[torch.device]:
    """Draw a device: ``cpu``, every visible ``cuda:N``, and ``meta`` if ``include_meta``.

    Shrinks towards ``cpu``.
    """
    check_type(bool, include_meta, "include_meta")
    return _devices(include_meta)


# functools.lru_cache throughout: Hypothesis has no public way to memoise a strategy built from
# arguments (its own @cacheable is private), and rebuilding one means validating it again.
@functools.cache
def _devices(include_meta: bool) -> st.SearchStrategy[torch.device]:
    return st.sampled_from([torch.device(d) for d in visible_devices(include_meta=include_meta)])


@functools.cache
def supported_dtypes(device: str) -> tuple[torch.dtype, ...]:
    """The dtypes of :data:`ALL_DTYPES` that can be allocated and filled on ``device``."""
    ok = []
    for dt in ALL_DTYPES:
        try:
            torch.zeros(2, dtype=torch.float32, device=device).to(dt)
        except (RuntimeError, TypeError):  # pragma: no cover - depends on the torch build
            continue
        ok.append(dt)
    return tuple(ok)


def dtypes(*, device: torch.device | str = "cpu") -> st.SearchStrategy[torch.dtype]:
    """Draw any dtype torch can make on ``device``: bool, signed and unsigned ints, floats
    (float16, bfloat16, float8 where the build has them) and complex.

    Shrinks towards ``torch.float32``.
    """
    check_type((str, torch.device), device, "device")
    return _dtypes(str(torch.device(device)))


@functools.cache
def _dtypes(device: str) -> st.SearchStrategy[torch.dtype]:
    return st.sampled_from(supported_dtypes(device))


def shapes(
    *, min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4
) -> st.SearchStrategy[tuple[int, ...]]:
    """Draw a tensor shape: 0-d (``()``) and empty (a zero side) included when the bounds allow.

    Shrinks towards fewer dimensions and smaller sides.
    """
    check_range(min_dims, "min_dims", low=0, high=32)
    check_range(max_dims, "max_dims", low=0, high=32)
    check_order(min_dims, max_dims, "min_dims", "max_dims")
    check_range(min_side, "min_side", low=0)
    check_range(max_side, "max_side", low=0)
    check_order(min_side, max_side, "min_side", "max_side")
    return _shapes(min_dims, max_dims, min_side, max_side)


@functools.cache
def _shapes(min_dims: int, max_dims: int, min_side: int, max_side: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


@functools.cache
def _uniform_shapes(max_dims: int, min_side: int, max_side: int) -> st.SearchStrategy[tuple[int, ...]]:
    # The rank drawn first, uniformly: high ranks come up as often as low ones, and shrink to the lowest that fails.
    return counted(st.integers(min_side, max_side), 0, max_dims, uniform=True).map(tuple)


VIEWS = ("contiguous", "transpose", "step_slice", "expand", "size1_stride")
# What gloo sends as is: contiguous by torch's rule, which lets a size-1 dimension carry any stride.
CONTIGUOUS_VIEWS = ("contiguous", "size1_stride")


# Tensors this small draw every element, so a failing value shrinks element by element;
# larger ones (only a pinned shape or a shape strategy makes them) take one seeded fill.
MAX_DRAWN_ELEMENTS = 64


def _elements(dtype: torch.dtype) -> st.SearchStrategy[bool | int | float | complex]:
    """A Python scalar that ``torch.tensor(..., dtype=dtype)`` stores: every value of bool and
    the integer dtypes; every float of float16/32/64 and complex (NaN and infinities included);
    finite floats in range for bfloat16 and float8, rounded on storing. Shrinks towards zero."""
    if dtype == torch.bool:
        return st.booleans()
    if dtype.is_complex:
        return st.complex_numbers(width=cast(Literal[32, 64, 128], torch.finfo(dtype).bits * 2))
    if dtype in (torch.float16, torch.float32, torch.float64):
        return st.floats(width=cast(Literal[16, 32, 64], torch.finfo(dtype).bits))
    if dtype.is_floating_point:
        # bfloat16, float8: no Hypothesis width matches; float32 values in range, rounded when stored.
        return st.floats(-torch.finfo(dtype).max, torch.finfo(dtype).max, width=32)
    info = torch.iinfo(dtype)
    return st.integers(info.min, info.max)


def _seeded(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    base = torch.randint(-100, 100, shape, generator=gen, dtype=torch.int64).to(torch.float64)
    if dtype.is_floating_point or dtype.is_complex:
        base = base / 8
    elif not dtype.is_signed:
        base = base.abs()
    return base.to(dtype)


def _values(
    draw: st.DrawFn, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, fill: bool
) -> torch.Tensor:
    if device.type == "meta":
        return torch.empty(shape, dtype=dtype, device=device)
    numel = math.prod(shape)
    if not fill:
        values = torch.zeros(shape, dtype=dtype)
    elif numel <= MAX_DRAWN_ELEMENTS:
        drawn = draw(st.lists(_elements(dtype), min_size=numel, max_size=numel))
        values = torch.tensor(drawn, dtype=dtype).reshape(shape)
    else:
        # None first: a failing large tensor shrinks to all zeros.
        seed = draw(st.none() | st.integers(0, 2**32 - 1))
        values = torch.zeros(shape, dtype=dtype) if seed is None else _seeded(shape, dtype, seed)
    return values.to(device)


def _as_view(t: torch.Tensor, view: str) -> torch.Tensor:
    # Each view keeps the drawn shape so that a failing example still shows that shape.
    if view == "transpose" and t.dim() >= 2:
        return t.transpose(0, 1).contiguous().transpose(0, 1)
    if view == "step_slice" and t.dim() >= 1:
        doubled = torch.cat([t, t], dim=0) if t.device.type != "meta" else t.new_empty((t.shape[0] * 2, *t.shape[1:]))
        return doubled[::2]
    if view == "expand" and t.dim() >= 1 and t.numel() > 0:
        return t[:1].expand(t.shape)
    if view == "size1_stride":
        # Any stride in a size-1 dimension: the same values, still contiguous by torch's rule
        # (torch.arange(6.0)[::6] is such a tensor), but strides that are not the standard ones.
        strides = [t.numel() + 1 if side == 1 else stride for side, stride in zip(t.shape, t.stride())]
        return t.as_strided(t.shape, strides)
    return t


def _checked_dtype(value: object) -> torch.dtype:
    check_type(torch.dtype, value, "dtype")
    return cast(torch.dtype, value)


def _checked_shape(value: Any) -> tuple[int, ...]:
    check_type(tuple, value, "shape")
    for side in value:
        check_range(side, "every side of shape", low=0)
    return cast(tuple[int, ...], value)


def _checked_device(value: Any) -> torch.device:
    check_type((str, torch.device), value, "device")
    try:
        return torch.device(value)
    except RuntimeError:
        raise InvalidArgument(f"device={value!r} is not a device torch knows") from None


def _pinned(value: Any, name: str, types: tuple[type, ...], check: Callable[[Any], Any]) -> Any:
    """``None``, a strategy (its draws are checked when drawn), or a value checked now."""
    if value is None or isinstance(value, st.SearchStrategy):
        return value
    check_type((*types, st.SearchStrategy), value, name)
    return check(value)


T = TypeVar("T")


@overload
def _aspect(pinned: Any, check: Callable[[Any], T], default: st.SearchStrategy[T]) -> st.SearchStrategy[T]: ...
@overload
def _aspect(pinned: Any, check: Callable[[Any], T], default: None) -> st.SearchStrategy[T] | None: ...
def _aspect(
    pinned: Any, check: Callable[[Any], T], default: st.SearchStrategy[T] | None
) -> st.SearchStrategy[T] | None:
    if pinned is None:
        return default
    if isinstance(pinned, st.SearchStrategy):
        return pinned.map(check)
    return st.just(pinned)


@st.composite
def _tensor(
    draw: st.DrawFn,
    dtype_st: Callable[[torch.device], st.SearchStrategy[torch.dtype]],
    shape_st: Callable[[torch.device], st.SearchStrategy[tuple[int, ...]]],
    device_st: st.SearchStrategy[torch.device],
    view_st: st.SearchStrategy[str],
    fill: bool,
) -> torch.Tensor:
    device = draw(device_st)
    dtype = draw(dtype_st(device))
    shape = draw(shape_st(device))
    view = draw(view_st)
    return _as_view(_values(draw, shape, dtype, device, fill), view)


def tensors(
    *,
    dtype: torch.dtype | st.SearchStrategy[torch.dtype] | None = None,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
    device: torch.device | str | st.SearchStrategy[torch.device | str] | None = None,
    include_meta: bool = False,
    views: Sequence[str] | None = None,
    max_dims: int | None = None,
    max_side: int | None = None,
    fill: bool = True,
) -> st.SearchStrategy[torch.Tensor]:
    """Draw a tensor of any supported dtype, shape and device, possibly a non-contiguous view.

    ``dtype``, ``shape`` and ``device`` each take a value, which pins that aspect, or a
    strategy that draws it (``tensors(dtype=dtypes(), shape=shapes(max_dims=2))``); a drawn
    value is checked as a given one is. Unpinned, the device is drawn first (``meta`` only if
    ``include_meta``), then a dtype it supports (:func:`dtypes`), then a shape of at most
    ``max_dims`` sides of at most ``max_side`` (default: the active scope's, ``3`` and ``4`` in
    ``small``; see :class:`~ppaux_strategies.Scope`). ``views`` (default: all, or those the active
    swarm configuration keeps) chooses among ``contiguous``,
    ``transpose``, ``step_slice``, ``expand`` and ``size1_stride`` (a tensor contiguous by
    torch's rule whose size-1 dimensions carry non-standard strides); views that need a
    dimension fall back to the plain tensor. :data:`CONTIGUOUS_VIEWS` are the views gloo sends
    as they are.

    Values: a tensor of at most :data:`MAX_DRAWN_ELEMENTS` elements draws each element (every
    value of bool and the integer dtypes; any float, NaN and infinities included, for
    float16/32/64 and complex; finite floats in range, rounded, for bfloat16 and float8);
    a larger one is all zeros or filled from one drawn seed. ``fill=False`` gives zeros.
    On ``meta`` there is no data, so unpinned shapes there may be huge (up to 2**20 per side).

    Shrinks towards a contiguous, zero-filled float32 CPU tensor of shape ``()``; a failing
    value shrinks element by element, towards zeros and the simplest non-zero value (``1``).
    """
    dtype = _pinned(dtype, "dtype", (torch.dtype,), _checked_dtype)
    shape = _pinned(shape, "shape", (tuple,), _checked_shape)
    device = _pinned(device, "device", (str, torch.device), _checked_device)
    check_type(bool, include_meta, "include_meta")
    check_type(bool, fill, "fill")
    max_dims = bound("max_dims") if max_dims is None else max_dims
    max_side = bound("max_side") if max_side is None else max_side
    check_range(max_dims, "max_dims", low=0, high=32)
    check_range(max_side, "max_side", low=0)
    swarm = active_swarm()
    if views is None:
        views = VIEWS if swarm is None or swarm.views is None else swarm.views
    views = tuple(views)
    if not views or any(v not in VIEWS for v in views):
        raise InvalidArgument(f"views={views!r} must be a non-empty selection of {VIEWS!r}")
    favoured = _Favoured.of(swarm, active_scope().uniform_sizes)
    # Tests build the same tensors() in every example: a strategy built once is validated once.
    return _tensors(dtype, shape, device, include_meta, views, max_dims, max_side, fill, favoured)


@dataclass(frozen=True)
class _Favoured:
    """What the active scope and swarm configuration change in a tensor drawn unpinned: the dtypes
    (names), whether a side may be 0, and whether the rank is drawn uniformly."""

    dtypes: tuple[str, ...] | None = None
    min_side: int = 0
    uniform_rank: bool = False

    @classmethod
    def of(cls, swarm: Swarm | None, uniform: bool) -> _Favoured:
        if swarm is None:
            return cls(uniform_rank=uniform)
        return cls(swarm.dtypes, 0 if swarm.empty else 1, uniform)


def _favoured_dtypes(device: torch.device, names: tuple[str, ...]) -> st.SearchStrategy[torch.dtype]:
    supported = supported_dtypes(str(device))
    kept = [dt for dt in supported if str(dt).removeprefix("torch.") in names]
    # A configuration drawn on another machine may name dtypes this build lacks: all of them then.
    return st.sampled_from(kept or supported)


@functools.lru_cache(maxsize=256)
def _tensors(
    dtype: torch.dtype | st.SearchStrategy[torch.dtype] | None,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None,
    device: torch.device | str | st.SearchStrategy[torch.device | str] | None,
    include_meta: bool,
    views: tuple[str, ...],
    max_dims: int,
    max_side: int,
    fill: bool,
    favoured: _Favoured = _Favoured(),
) -> st.SearchStrategy[torch.Tensor]:
    device_st = _aspect(device, _checked_device, devices(include_meta=include_meta))
    pinned_dtype = _aspect(dtype, _checked_dtype, None)

    def dtype_st(dev: torch.device) -> st.SearchStrategy[torch.dtype]:
        # Unpinned, the dtype depends on the drawn device: only those it supports.
        if pinned_dtype is not None:
            return pinned_dtype
        return dtypes(device=dev) if favoured.dtypes is None else _favoured_dtypes(dev, favoured.dtypes)

    min_side = min(favoured.min_side, max_side)
    if favoured.uniform_rank:
        drawn_shapes = _uniform_shapes(max_dims, min_side, max_side)
    else:
        drawn_shapes = shapes(max_dims=max_dims, min_side=min_side, max_side=max_side)
    small = _aspect(shape, _checked_shape, drawn_shapes)
    # Only meta has no storage, so only meta gets shapes far larger than memory.
    huge = (
        small
        if shape is not None
        # Sides up to 2**20, fewer past rank 3: the element count must still fit torch's int64.
        else st.one_of(
            small, shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=2 ** min(20, 60 // max(1, max_dims)))
        )
    )

    def shape_st(dev: torch.device) -> st.SearchStrategy[tuple[int, ...]]:
        return huge if dev.type == "meta" else small

    return _tensor(dtype_st, shape_st, device_st, st.sampled_from(views), fill)


def tensors_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal in dtype, shape and every bit of value (device aside); works for every dtype."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.device.type == "meta" or b.device.type == "meta":
        return a.device.type == b.device.type
    return bool(torch.equal(tensor_bytes(a), tensor_bytes(b)))
