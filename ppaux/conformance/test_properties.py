"""Properties that follow from the contract: round trip, composition, prefix hygiene,
values never read (any dtype, shape, layout, device)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from hypothesis import strategies as st
from ppaux_strategies import (
    PPOutput,
    RecordingObserver,
    aux_names,
    aux_payloads,
    near_prefix_keys,
    tensors,
    transport_dicts,
)

from ppaux.conformance.support import assert_same_dict, assert_same_objects, raises_documented, snapshot, transports
from ppaux.testing.impl import Implementation
from ppaux.testing.profiles import given

pytestmark = pytest.mark.contract


@pytest.mark.clause("round-trip")
@given(data=st.data())
def test_round_trip(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """round-trip: add then pop returns the observer's object, restores the dict,
    and hands over the identical tensors."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    payload = data.draw(aux_payloads(prefix=t.prefix), label="payload")
    snap = snapshot(d)
    t.add(d, PPOutput(payload))
    obs = RecordingObserver()
    result = t.pop(d, obs)
    assert result is obs.returned[0], (
        f"expected pop to return the observer's own object {obs.returned[0]!r}, got {result!r}"
    )
    assert_same_dict(d, snap)
    assert_same_objects(obs.snapshots[0], payload)


@pytest.mark.clause("composition")
@given(data=st.data())
def test_outputs_with_disjoint_names_compose(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """composition: outputs with disjoint names can be added one after the other;
    one pop hands the observer all of them."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    names = data.draw(st.lists(aux_names(prefix=t.prefix), min_size=2, max_size=4, unique=True), label="names")
    cut = data.draw(st.integers(1, len(names) - 1), label="cut")
    tensor = data.draw(tensors(), label="tensor")
    first, second = ({n: tensor for n in names[:cut]}, {n: tensor for n in names[cut:]})
    snap = snapshot(d)
    t.add(d, PPOutput(first))
    t.add(d, PPOutput(second))
    obs = RecordingObserver()
    t.pop(d, obs)
    assert_same_objects(obs.snapshots[0], {**first, **second})
    assert_same_dict(d, snap)


@pytest.mark.clause("prefix-hygiene")
@given(data=st.data())
def test_keys_that_only_resemble_the_prefix_are_ordinary(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """prefix-hygiene: keys with no trailing dot, other case or the prefix mid-key are ordinary keys."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    tensor = data.draw(tensors(), label="tensor")
    for key in near_prefix_keys(t.prefix):
        d[key] = tensor
    snap = snapshot(d)
    obs = RecordingObserver()
    result = t.pop(d, obs)
    assert result is None, (
        f"expected pop to take none of {near_prefix_keys(t.prefix)!r} as aux keys and return None, got {result!r}"
    )
    assert obs.calls == [], f"expected no call of from_pp_tensors() without aux keys, got {len(obs.calls)}"
    t.add(d, PPOutput({"scores": tensor}))
    t.pop(d, obs)
    assert list(obs.snapshots[0]) == ["scores"], (
        f"expected from_pp_tensors() handed only ['scores'], got {list(obs.snapshots[0])!r}"
    )
    assert_same_dict(d, snap)


@pytest.mark.clause("prefix-hazard")
@given(data=st.data(), name=st.sampled_from(["token_ids", "user_key", "x"]))
def test_ordinary_key_that_starts_with_the_prefix_is_taken_as_aux(
    ppaux_impl: Implementation, data: st.DataObject, name: str
) -> None:
    """prefix-hazard: the documented hazard, an ordinary key that happens to start with the prefix is an aux key to pop
    (P1 without an observer; handed to the observer and removed with one)."""
    t = data.draw(transports(ppaux_impl), label="transport")
    ordinary = torch.zeros(1)
    d = {t.prefix + name: ordinary}
    with raises_documented(t, "P1"):
        t.pop(d, None)
    obs = RecordingObserver()
    t.pop(d, obs)
    assert_same_objects(obs.snapshots[0], {name: ordinary})
    assert d == {}, f"expected pop to remove the key that starts with the prefix, got {d!r}"


class _TrapTensor(torch.Tensor):
    """A tensor that fails on any torch operation: proof that add and pop never read, copy or move it."""

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., object],
        types: tuple[type, ...],
        args: tuple[object, ...] = (),
        kwargs: dict[str, object] | None = None,
    ) -> object:
        if func in (torch.Tensor.__repr__, torch.Tensor.__format__, torch.Tensor.__hash__):
            # torch's Tensor.__torch_function__ carries no annotations.
            return super().__torch_function__(func, types, args, kwargs)  # type: ignore[no-untyped-call]
        raise AssertionError(
            f"expected add and pop never to touch an aux tensor, got a call of {getattr(func, '__name__', func)}"
        )


@pytest.mark.clause("values-never-read")
@given(data=st.data())
def test_any_dtype_shape_layout_and_device_travels_untouched(ppaux_impl: Implementation, data: st.DataObject) -> None:
    """values-never-read: tensors of any dtype, shape (0-d, empty), view and device
    (meta too) pass add and pop untouched."""
    t = data.draw(transports(ppaux_impl), label="transport")
    d = data.draw(transport_dicts(prefix=t.prefix), label="d")
    payload = data.draw(aux_payloads(prefix=t.prefix, tensors=tensors(include_meta=True)), label="payload")
    trapped = {n: v.as_subclass(_TrapTensor) for n, v in payload.items()}
    t.add(d, PPOutput(trapped))
    obs = RecordingObserver()
    t.pop(d, obs)
    assert_same_objects(obs.snapshots[0], trapped)
