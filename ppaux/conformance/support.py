"""What the conformance tests share: dict snapshots, the documented errors, the contract's oracle,
and strategies bound to the implementation under test (the ``ppaux_impl`` fixture's)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from hypothesis import strategies as st
from hypothesis import target
from ppaux_strategies import active_scope, aux_outputs, observers, prefixes, transport_dicts

from ppaux.core.errors import CATALOG, AuxiliaryPPError
from ppaux.testing.impl import Implementation

NO_NAME = object()


def snapshot(d: Mapping[Any, object]) -> list[tuple[object, object]]:  # Any: a PP dict's keys, of any type
    """Keys in order with their value objects: what 'exactly as before' compares."""
    return list(d.items())


def assert_same_dict(d: Mapping[Any, object], snap: list[tuple[object, object]]) -> None:
    now = list(d.items())
    assert [k for k, _ in now] == [k for k, _ in snap], (
        f"expected the keys {[k for k, _ in snap]!r}, got {[k for k, _ in now]!r}"
    )
    for (k, before), (_, after) in zip(snap, now):
        assert after is before, f"expected the very value object under {k!r}, got another object: {after!r}"


def assert_same_objects(got: Mapping[str, object], expected: Mapping[str, object]) -> None:
    """The observer was handed exactly ``expected``: the same names in order, each the very object.

    Compares by identity, never ``==``: tensors compare element-wise, and a copy must show as one.
    """
    assert list(got) == list(expected), (
        f"expected the observer to be handed the names {list(expected)!r}, got {list(got)!r}"
    )
    for name, value in expected.items():
        assert got[name] is value, (
            f"expected {name!r} handed over as the very object that was added, got another object: {got[name]!r}"
        )


def assert_all_or_nothing(call: Callable[[Any, Any], object], d: Mapping[Any, object], arg: object) -> None:
    """``call(d, arg)`` (add or pop); when it raises, for any reason, ``d`` must be exactly as before."""
    snap = snapshot(d)
    try:
        call(d, arg)
    except Exception:
        assert_same_dict(d, snap)


def documented_message(code: str, name: object = NO_NAME) -> str:
    entry = CATALOG[code]
    given = "no name" if name is NO_NAME else f"the name {name!r}"
    assert entry.takes_name == (name is not NO_NAME), (
        f"expected {code} {'with' if entry.takes_name else 'without'} a name, got {given}"
    )
    return entry.message(None if name is NO_NAME else name)


def assert_documented(impl: Implementation, exc: BaseException, code: str, name: object = NO_NAME) -> None:
    """``exc`` is the contract's error ``code``: a RuntimeError whose str() is exactly the catalog text."""
    expected = documented_message(code, name)
    assert isinstance(exc, RuntimeError), f"expected RuntimeError {expected!r}, got {type(exc).__name__}: {exc}"
    assert str(exc) == expected, f"expected {code} {expected!r}, got {str(exc)!r}"
    if impl.is_reference:
        # Only ppaux promises the subclass and its code; other implementations need not.
        assert isinstance(exc, AuxiliaryPPError) and exc.code == code, (
            f"expected ppaux's AuxiliaryPPError with code {code}, "
            f"got {type(exc).__name__} with code {getattr(exc, 'code', None)!r}"
        )


@contextlib.contextmanager
def raises_documented(impl: Implementation, code: str, name: object = NO_NAME) -> Iterator[None]:
    """The block raises the contract's error ``code``; a block that raises nothing fails in words."""
    try:
        yield
    except Exception as exc:
        caught = exc
    else:
        raise AssertionError(f"expected {code} {documented_message(code, name)!r}, got no exception")
    assert_documented(impl, caught, code, name)


def raised(exc_type: type[BaseException], expected: str, call: Callable[..., object], *args: object) -> BaseException:
    """What ``call(*args)`` raised, an ``exc_type``; a call that returns fails, saying that ``expected`` was."""
    try:
        result = call(*args)
    except exc_type as exc:
        return exc
    raise AssertionError(f"expected {expected}, got a return value: {result!r}")


def verdict(expected: tuple[str, object]) -> str:
    """An oracle verdict, ``(code, name)``, in words: the code and its exact message."""
    return f"{expected[0]} {documented_message(*expected)!r}"


def aux_keys(d: Mapping[Any, object], prefix: str) -> list[str]:
    return [k for k in d if isinstance(k, str) and k.startswith(prefix)]


def guide(d: Mapping[Any, object], prefix: str, payload: Mapping[Any, object] | None = None) -> None:
    """Steer generation where bigger or stranger is where a bug hides (:func:`hypothesis.target`): more aux
    keys, more keys in all, wider payloads, higher ranks, more elements. Only in a scope that asks for it
    (``guided``): ``small`` never does, so CI draws what it always drew. Called from the cases the tests draw
    (never from a test's body: Hypothesis derives a test's derandomized examples from its source)."""
    if not active_scope().guided:
        return
    values = [v for v in d.values() if torch.is_tensor(v)] + [v for v in (payload or {}).values() if torch.is_tensor(v)]
    target(float(len(aux_keys(d, prefix))), label="aux keys")
    target(float(len(d)), label="keys")
    target(float(len(payload or ())), label="payload width")
    target(float(max((v.dim() for v in values), default=0)), label="rank")
    target(math.log2(1 + max((v.numel() for v in values), default=0)), label="elements")


def transports(impl: Implementation) -> st.SearchStrategy[Implementation]:
    """``impl``, bound to a drawn prefix where it takes one (ppaux's own): every property must
    hold for any reserved prefix. Shrinks towards SGLang's prefix."""
    if impl.is_reference:
        return prefixes().map(impl.with_prefix)
    return st.just(impl)


class Oracle:
    """The contract's verdicts for one prefix."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def add_error(self, tensors: Mapping[Any, object], output: Any) -> tuple[str, object] | None:
        if not hasattr(output, "to_pp_tensors"):
            return ("A1", NO_NAME)
        payload = output.payload
        if not payload:
            return ("A2", NO_NAME)
        for name, value in payload.items():
            if not isinstance(name, str) or name == "":
                return ("A3", NO_NAME)
            if not torch.is_tensor(value):
                return ("A4", name)
            if self.prefix + name in tensors:
                return ("A5", name)
        return None

    def aux_items(self, tensors: Mapping[Any, object]) -> list[tuple[str, object]]:
        return [
            (k[len(self.prefix) :], v) for k, v in tensors.items() if isinstance(k, str) and k.startswith(self.prefix)
        ]

    def pop_error(self, tensors: Mapping[Any, object], observer: object) -> tuple[str, object] | None:
        items = self.aux_items(tensors)
        if not items:
            return None
        if observer is None:
            return ("P1", NO_NAME)
        if not hasattr(observer, "from_pp_tensors"):
            return ("P2", NO_NAME)
        if not all(torch.is_tensor(v) for _, v in items):
            return ("P3", NO_NAME)
        return None


@st.composite
def add_cases(draw: st.DrawFn, impl: Implementation, *, valid: bool) -> tuple[Implementation, dict[Any, Any], object]:
    """(transport, PP dict, output): the output may collide with aux keys already in the dict."""
    t = draw(transports(impl))
    d = draw(st.one_of(transport_dicts(prefix=t.prefix), transport_dicts(prefix=t.prefix, aux=True)))
    out = draw(aux_outputs(prefix=t.prefix, valid=valid, collide_with=d))
    payload = getattr(out, "payload", None)
    guide(d, t.prefix, payload if isinstance(payload, dict) else None)
    return t, d, out


@st.composite
def pop_cases(
    draw: st.DrawFn, impl: Implementation, *, mutating: bool = False, non_tensors: bool = True
) -> tuple[Implementation, dict[Any, Any], object]:
    """(transport, PP dict holding aux keys, observer); the aux values may be non-tensors."""
    t = draw(transports(impl))
    d = draw(transport_dicts(prefix=t.prefix, aux=True))
    if non_tensors and draw(st.booleans()):
        key = draw(st.sampled_from(aux_keys(d, t.prefix)))
        d[key] = draw(st.sampled_from([None, [0.5], "x"]))
    modes = ("rebuild", "return_none", "raise") + (("drop_one", "add_one", "clear") if mutating else ())
    obs = draw(observers(modes=modes))
    guide(d, t.prefix)
    return t, d, obs
