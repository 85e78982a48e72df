"""What SGLang does with a rebuilt auxiliary output after ``pop``, and a structural comparison of
what comes out of it.

SGLang 0.5.23 never looks at the rebuilt output's ``to_pp_tensors()`` again: the scheduler calls
``copy_to_host(copy_tensor)`` on it (``copy_auxiliary_output_to_cpu`` in
``sglang/srt/managers/utils.py``), keeps the host output that returns, and later calls
``consume(batch, commits)`` on that (``sglang/srt/managers/auxiliary_output.py``). So the kit
compares the host outputs of the original and of the rebuilt output, field by field.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from ppaux_strategies.tensors import tensors_equal


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """The ``copy_tensor`` the kit hands ``copy_to_host``: a CPU copy, as SGLang's asynchronous
    device-to-host copy delivers once it has completed."""
    return tensor.detach().to("cpu", copy=True)


def has_lifecycle(output: object) -> bool:
    return callable(getattr(output, "copy_to_host", None))


def _describe(value: object) -> str:
    if torch.is_tensor(value):
        return f"a tensor {tuple(value.shape)} {value.dtype}"
    return f"a {type(value).__name__}"


def _fields(value: object) -> tuple[tuple[str, object], ...] | None:
    """The named parts of a dataclass, a named tuple or a plain object; ``None`` for anything else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return tuple(zip(value._fields, value))
    # A plain object is its attributes, unless its class says itself what equal means.
    if hasattr(value, "__dict__") and not isinstance(value, type) and type(value).__eq__ is object.__eq__:
        return tuple(vars(value).items())
    return None


def difference(before: Any, after: Any, path: str = "host", _seen: set[tuple[int, int]] | None = None) -> str | None:
    """Where and how ``after`` differs from ``before``, or ``None``: tensors by dtype, shape and
    every bit of value; dataclasses, named tuples and plain objects field by field; tuples, lists
    and dicts item by item; anything else (an object with its own ``__eq__`` too) by ``==``. The
    answer names the path, e.g.
    ``host.values: shape (2, 3) became (6,)`` or ``host.rows[2]: 0.5 became 0.25``."""
    seen = set() if _seen is None else _seen
    if (id(before), id(after)) in seen:
        return None
    seen.add((id(before), id(after)))
    if torch.is_tensor(before) and torch.is_tensor(after):  # one tensor alone differs in type, below
        if before.dtype != after.dtype:
            return f"{path}: dtype {before.dtype} became {after.dtype}"
        if before.shape != after.shape:
            return f"{path}: shape {tuple(before.shape)} became {tuple(after.shape)}"
        return None if tensors_equal(before, after) else f"{path}: values differ"
    if type(before) is not type(after):
        return f"{path}: {_describe(before)} became {_describe(after)}"
    named = _fields(before)
    if named is not None:
        for name, value in named:
            if not hasattr(after, name):
                return f"{path}.{name}: missing"
            found = difference(value, getattr(after, name), f"{path}.{name}", seen)
            if found:
                return found
        extra = sorted(set(dict(_fields(after) or ())) - {name for name, _ in named})
        return f"{path}: attributes {extra} appeared" if extra else None
    if isinstance(before, (list, tuple)):
        if len(before) != len(after):
            return f"{path}: {len(before)} items became {len(after)}"
        for i, (x, y) in enumerate(zip(before, after)):
            found = difference(x, y, f"{path}[{i}]", seen)
            if found:
                return found
        return None
    if isinstance(before, dict):
        if list(before) != list(after):
            return f"{path}: keys {list(before)!r} became {list(after)!r}"
        for key in before:
            found = difference(before[key], after[key], f"{path}[{key!r}]", seen)
            if found:
                return found
        return None
    same = before == after or (before != before and after != after)  # NaN equals NaN here
    return None if same else f"{path}: {before!r} became {after!r}"
