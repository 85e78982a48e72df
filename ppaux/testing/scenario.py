"""The calls a test made into the implementation under test, written down as code.

When a conformance test fails, the last Hypothesis example it ran is its minimal counterexample.
:class:`CallRecorder` keeps that example's add and pop calls (the dict as it was, the output or
observer each was given) and :func:`describe` writes them as straight-line Python: the values as
literals bound to names, the calls as steps. ``ppaux check --regressions`` builds its standalone
regression tests from that description (:mod:`ppaux.regressions`).
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import ppaux_strategies as doubles
import torch
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument

# The doubles a regression test may need, by the class the suite drew.
DOUBLES = {
    doubles.PPOutput: "PPOutput",
    doubles.RaisingPPOutput: "RaisingPPOutput",
    doubles.NotPPOutput: "NotPPOutput",
    doubles.RecordingObserver: "RecordingObserver",
    doubles.NotPPObserver: "NotPPObserver",
}
# Tensors of these subclasses are written as a plain tensor viewed as the file's class of that name.
TENSOR_DOUBLES = {"_TrapTensor": "TrapTensor"}
# What a generated file binds at module level: no value may take one of these names.
RESERVED = {
    "torch",
    "unittest",
    "multiprocessing",
    "self",
    "result",
    "raised",
    "exitcode",
    "_OUTPUT_PREFIX",
    "add_auxiliary_output_to_pp_tensors",
    "pop_auxiliary_output_from_pp_tensors",
    *DOUBLES.values(),
    *TENSOR_DOUBLES.values(),
    "Rebuilt",
    "ObserverFailure",
}
SMALL = 16


class Unwritable(Exception):
    """A value of the counterexample that cannot be written as code (the message says which)."""


@dataclass
class Call:
    """One call into the implementation: the dict's items before and after, the output or observer."""

    op: str
    tensors: object
    arg: object
    before: list[tuple[object, object]]
    after: list[tuple[object, object]] | None = None


@dataclass
class CallRecorder:
    """Keeps the add and pop calls of the current Hypothesis example (of the current test, outside
    Hypothesis): when a test fails, those are its minimal counterexample's calls."""

    calls: list[Call] = field(default_factory=list)
    _example: object = None

    def start_test(self) -> None:
        self.calls, self._example = [], None

    def _follow_example(self) -> None:
        try:
            example = current_build_context()
        except InvalidArgument:  # not inside a Hypothesis test: the test is one example
            return
        if example is not self._example:
            self.calls, self._example = [], example

    def wrap(self, op: str, fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def recorded(tensors: Any, arg: Any) -> Any:
            self._follow_example()
            call = Call(op, tensors, arg, _items(tensors))
            self.calls.append(call)
            try:
                return fn(tensors, arg)
            finally:
                call.after = _items(tensors)

        return recorded


def _items(tensors: Any) -> list[tuple[object, object]]:  # Any: items() is tried on whatever was passed
    try:
        return list(tensors.items())
    except Exception:  # not a mapping: the implementation's own error is the finding
        return []


def _same(a: list[tuple[object, object]], b: list[tuple[object, object]] | None) -> bool:
    return b is not None and len(a) == len(b) and all(ka == kb and va is vb for (ka, va), (kb, vb) in zip(a, b))


class _Names:
    """Python names for the counterexample's values: from the PP key or item name they sit under."""

    def __init__(self) -> None:
        self.used = set(RESERVED)

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_").lower() or "value"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = f"value_{base}"
        name, n = base, 2
        while name in self.used:
            name, n = f"{base}_{n}", n + 1
        self.used.add(name)
        return name


class Step(TypedDict):
    """One call of a scenario: ``op`` on the dict named ``dict`` with ``arg``, after the ``setup`` lines."""

    op: str
    dict: str
    arg: str
    setup: list[str]


@dataclass
class Scenario:
    """Straight-line code of a counterexample: each step's definitions, then its call."""

    prefix: str
    steps: list[Step] = field(default_factory=list)
    doubles: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"prefix": self.prefix, "steps": self.steps, "doubles": self.doubles}


class _Writer:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.names = _Names()
        self.bound: dict[int, str] = {}
        self.keep: list[object] = []  # ids stay unique while the values live
        self.lines: list[str] = []
        self.doubles: list[str] = []

    def bind(self, value: object, hint: str, expr: Callable[[], str]) -> str:
        if id(value) in self.bound:
            return self.bound[id(value)]
        code = expr()
        name = self.names.fresh(hint)
        self.bound[id(value)] = name
        self.keep.append(value)
        self.lines.append(f"{name} = {code}")
        return name

    def use(self, double: str) -> None:
        if double not in self.doubles:
            self.doubles.append(double)

    def key(self, key: object) -> str:
        return key_code(key, self.prefix, lambda k: self.value(k, "key"))

    def hint(self, key: object) -> str:
        if isinstance(key, str) and key.startswith(self.prefix):
            key = key[len(self.prefix) :]
        return key if isinstance(key, str) and key else "tensor"

    def mapping(self, items: list[tuple[object, object]]) -> str:
        entries = [f"{self.key(k)}: {self.value(v, self.hint(k))}" for k, v in items]
        return "{" + ", ".join(entries) + "}"

    def value(self, value: object, hint: str) -> str:
        if isinstance(value, torch.Tensor):
            return self.bind(value, hint, lambda: tensor_expr(value, self))
        double = DOUBLES.get(type(value))
        if double:
            return self.bind(value, hint, lambda: self.double(value, double))
        return literal(value, self)

    def double(self, value: object, double: str) -> str:
        self.use(double)
        if isinstance(value, doubles.PPOutput):
            payload = value.payload
            args = self.mapping(list(payload.items())) if type(payload) is dict else literal(payload, self)
            return f"PPOutput({args})"
        if isinstance(value, doubles.RecordingObserver):
            return f"RecordingObserver({value.mode!r})"
        return f"{double}()"


def key_code(key: object, prefix: str, other: Callable[[object], str] | None = None) -> str:
    """A PP dict key as code: a reserved key reads ``_OUTPUT_PREFIX + "name"``."""
    if isinstance(key, str) and key.startswith(prefix):
        rest = key[len(prefix) :]
        return f"_OUTPUT_PREFIX + {rest!r}" if rest else "_OUTPUT_PREFIX"
    return (other or literal)(key)


def literal(value: object, writer: _Writer | None = None) -> str:
    """``value`` as a Python expression: None, bools, numbers, str, and lists, tuples and dicts of them."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, complex):
        return f"complex({literal(value.real)}, {literal(value.imag)})"
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        inner = ", ".join(_element(v, writer) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if type(value) is dict:
        return (
            writer.mapping(list(value.items()))
            if writer
            else "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
        )
    raise Unwritable(f"a {type(value).__name__} value ({value!r}) cannot be written as code")


def _element(value: object, writer: _Writer | None) -> str:
    return writer.value(value, "value") if writer is not None else literal(value)


def _plain(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself, or a plain-tensor view of a tensor double (whose torch functions trap)."""
    if type(t) is torch.Tensor:
        return t
    # The trap fails on any torch function, as_subclass included; reading it for the file must not.
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(torch.Tensor)


def tensor_expr(t: torch.Tensor, writer: _Writer | None = None) -> str:
    """An expression that makes a tensor like ``t``: dtype, shape, strides, storage offset, device
    and values (none on ``meta``); a view stays a view of a storage of the same size."""
    cls = type(t).__name__
    if type(t) is not torch.Tensor and cls not in TENSOR_DOUBLES:
        raise Unwritable(f"a tensor of the subclass {cls} cannot be written as code")
    plain = _plain(t)
    if plain.layout != torch.strided:
        raise Unwritable(f"a {plain.layout} tensor cannot be written as code")
    expr = _strided_expr(plain)
    if type(t) is not torch.Tensor:
        double = TENSOR_DOUBLES[cls]
        if writer is not None:
            writer.use(double)
        expr = f"{expr}.as_subclass({double})"
    return expr


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype)  # "torch.float16"


def _strided_expr(t: torch.Tensor) -> str:
    itemsize = t.element_size()
    storage = t.untyped_storage().nbytes() // itemsize if itemsize else 0
    # Strides as torch.zeros(shape) has them: an empty or size-1 dimension may carry others.
    simple = t.storage_offset() == 0 and storage == t.numel() and t.stride() == _row_major(tuple(t.shape))
    if simple:
        return _filled(t, tuple(t.shape))
    whole = t.as_strided((storage,), (1,), 0)
    return f"{_filled(whole, (storage,))}.as_strided({tuple(t.shape)}, {tuple(t.stride())}, {t.storage_offset()})"


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for side in reversed(shape):
        strides.append(step)
        step *= max(side, 1)
    return tuple(reversed(strides))


def _filled(t: torch.Tensor, shape: tuple[int, ...]) -> str:
    """A contiguous tensor of ``shape`` holding ``t``'s values."""
    device = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
    dtype = "" if t.dtype == torch.float32 else f", dtype={_dtype(t.dtype)}"
    if t.device.type == "meta":
        return f"torch.empty({shape}{dtype}{device})"
    cpu = t.detach().cpu()
    flat = cpu.reshape(-1).contiguous()
    if flat.numel() == 0 or not bool(flat.view(torch.uint8).any()):
        return "torch.tensor(0.0)" if shape == () and not dtype + device else f"torch.zeros({shape}{dtype}{device})"
    expr = f"torch.tensor({literal(cpu.reshape(shape).tolist())}{dtype}{device})"
    if _reproduces(expr, cpu.reshape(shape)):
        return expr
    # Values torch.tensor() cannot take back (a uint64 past int64): the very bytes, viewed as the dtype.
    raw = list(flat.view(torch.uint8).tolist())
    to_device = "" if t.device.type == "cpu" else f".to({str(t.device)!r})"
    return f"torch.tensor({raw}, dtype=torch.uint8).view({_dtype(t.dtype)}).reshape({shape}){to_device}"


def _reproduces(expr: str, expected: torch.Tensor) -> bool:
    try:
        got = eval(expr, {"torch": torch, "float": float, "complex": complex}).cpu()  # noqa: S307 - our own code
    except Exception:
        return False
    return (
        got.dtype == expected.dtype
        and got.shape == expected.shape
        and torch.equal(got.reshape(-1).view(torch.uint8), expected.reshape(-1).contiguous().view(torch.uint8))
    )


def describe(calls: list[Call], prefix: str) -> dict[str, object]:
    """The calls as code: per step, the lines that define what it uses, and the call itself.

    A step runs on the dict the previous step left when the test passed that same dict on
    untouched; otherwise the step's dict is written out afresh.
    """
    writer = _Writer(prefix)
    scenario = Scenario(prefix)
    previous: Call | None = None
    dict_name = ""
    for call in calls:
        writer.lines = []
        continues = previous is not None and call.tensors is previous.tensors and _same(call.before, previous.after)
        if not continues:
            if type(call.tensors) is not dict:
                raise Unwritable(f"a {type(call.tensors).__name__} PP dict cannot be written as code")
            code = writer.mapping(call.before)
            dict_name = writer.names.fresh("tensors")
            writer.lines.append(f"{dict_name} = {code}")
        arg = writer.value(call.arg, "output" if call.op == "add" else "observer")
        scenario.steps.append({"op": call.op, "dict": dict_name, "arg": arg, "setup": writer.lines})
        previous = call
    scenario.doubles = writer.doubles
    return scenario.to_json()
