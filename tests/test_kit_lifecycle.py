"""The kit follows the rebuilt output through SGLang's lifecycle: copy_to_host(copy) on the original
and on the rebuilt output, then the host outputs compared field by field. Each finding fails where
it should and passes where it should."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st

from ppaux.testing import KitFailure, check_observer
from ppaux.testing.calls import SuiteGuard
from ppaux.testing.findings import message
from ppaux.testing.lifecycle import difference, to_host

ONE = settings(database=None, max_examples=1)
VALUES = torch.arange(6.0).reshape(2, 3)


@dataclass
class Host:
    values: torch.Tensor
    rows: list[float] = field(default_factory=list)

    def consume(self, batch: Any, commits: Any) -> None:
        pass


class Output:
    """A device output: sends ``values`` over PP, hands the scheduler a ``Host`` of them."""

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"kit.values": self.values}

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Any:
        return Host(copy_tensor(self.values), self.values.sum(dim=-1).tolist())


class Rebuilds:
    """The observer: builds ``output_class`` from what arrives."""

    output_class: type = Output

    def from_pp_tensors(self, tensors: Mapping[str, torch.Tensor]) -> Any:
        return self.output_class(tensors["kit.values"])


def observer(output_class: type) -> Callable[[], Rebuilds]:
    return type("Observer", (Rebuilds,), {"output_class": output_class})


def check(output_class: type = Output, rebuilt_class: type = Output, **kwargs: Any) -> None:
    check_observer(observer(rebuilt_class), st.just(output_class(VALUES)), settings=ONE, **kwargs)


def failure(*args: Any, **kwargs: Any) -> KitFailure:
    with pytest.raises(KitFailure) as info:
        check(*args, **kwargs)
    return info.value


def test_a_faithful_rebuild_passes_the_lifecycle():
    check()


class WithoutCopyToHost:
    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"kit.values": self.values}


def test_a_rebuilt_output_without_copy_to_host_is_k11():
    assert str(failure(rebuilt_class=WithoutCopyToHost)) == message("K11", detail="WithoutCopyToHost")


class HostWithoutConsume(Output):
    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Any:
        return {"values": copy_tensor(self.values)}


def test_a_host_output_without_consume_is_k12_on_the_side_that_returned_it():
    assert str(failure(rebuilt_class=HostWithoutConsume)) == message("K12", detail="rebuilt", host="a dict")
    assert str(failure(output_class=HostWithoutConsume)) == message("K12", detail="original", host="a dict")


class CudaOnly(Output):
    """Assumes the tensors it is rebuilt from are still on the sender's GPU."""

    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Any:
        raise ValueError("expected CUDA tensors")


def test_a_copy_to_host_that_raises_is_k13():
    assert str(failure(rebuilt_class=CudaOnly)) == message(
        "K13", detail="copy_to_host() of the rebuilt output raised ValueError: expected CUDA tensors"
    )


class Incomparable:
    def __init__(self) -> None:
        self.value = 1

    def consume(self, batch: Any, commits: Any) -> None:
        pass

    def __eq__(self, other: object) -> bool:
        raise TypeError("cannot compare")

    __hash__ = None  # type: ignore[assignment]


class IncomparableHost(Output):
    def copy_to_host(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Any:
        return Host(copy_tensor(self.values), [Incomparable()])


def test_a_comparison_that_raises_is_k13_and_equal_is_the_escape_hatch():
    assert str(failure(IncomparableHost, IncomparableHost)) == message(
        "K13", detail="comparing the host outputs raised TypeError: cannot compare"
    )
    check(IncomparableHost, IncomparableHost, equal=lambda original, rebuilt: True)


class SpinsInCopy(Output):
    def _spin(self, copy_tensor: Callable[[torch.Tensor], torch.Tensor]) -> Any:
        while True:
            pass

    # An alias: the stack names _spin; the finding names the call the kit made.
    copy_to_host = _spin


@pytest.mark.subprocess
def test_a_copy_to_host_that_hangs_is_named_by_the_call_the_kit_made():
    headline = str(failure(Output, SpinsInCopy, timeout=0.2)).splitlines()[0]
    # The limit of the replays after the first hang follows how long the original's copy_to_host took.
    why = "the per-call time limit|after a first hang, 10x the slowest copy_to_host that returned, at least 0.1 s; the "
    why += "per-call limit is 0.2 s"
    assert re.fullmatch(rf"K14 hang: copy_to_host did not return within [0-9.]+ s \(({why})\)", headline), headline


class InACycle(Output):
    def __init__(self, values: torch.Tensor) -> None:
        super().__init__(values)
        self.me = self  # only a collection frees what it received


def test_received_tensors_held_only_by_a_reference_cycle_are_released():
    # Automatic collection off: only the kit's own collection can free the cycle before it looks.
    # Under a supervisor (a guard installed, as in the shipped suite's run) the check runs in this process.
    gc.disable()
    try:
        with SuiteGuard().installed():
            check(Output, InACycle)
    finally:
        gc.enable()


class Flat(Output):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"kit.values": self.values.reshape(-1)}


def test_a_rebuild_that_loses_structure_to_pp_tensors_hides_is_k9_with_the_path():
    assert str(failure(Flat, Flat)) == message("K9", detail="host.values: shape (2, 3) became (6,)")


def test_without_copy_to_host_the_kit_compares_to_pp_tensors_only():
    """The weaker check: a flat rebuild of an output without copy_to_host passes."""
    check(WithoutFlatHost, WithoutFlatHost)


class WithoutFlatHost(WithoutCopyToHost):
    def to_pp_tensors(self) -> Mapping[str, torch.Tensor]:
        return {"kit.values": self.values.reshape(-1)}


def test_the_copy_the_kit_hands_over_is_a_cpu_copy():
    t = torch.arange(3.0)
    copied = to_host(t)
    assert copied.device.type == "cpu" and torch.equal(copied, t) and copied.data_ptr() != t.data_ptr()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: a device tensor's copy to the host")
def test_the_copy_of_a_device_tensor_the_kit_hands_over_is_on_the_host():
    t = torch.arange(3.0, device="cuda")
    copied = to_host(t)
    assert copied.device.type == "cpu" and torch.equal(copied, t.cpu())


class Pair(NamedTuple):
    left: Any
    right: Any


class Plain:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


@pytest.mark.parametrize(
    "before, after, said",
    [
        (torch.zeros(2), torch.zeros(2, dtype=torch.int64), "host: dtype torch.float32 became torch.int64"),
        (torch.zeros(2), torch.zeros(1, 2), "host: shape (2,) became (1, 2)"),
        (torch.zeros(2), torch.ones(2), "host: values differ"),
        (torch.zeros(2), [0.0, 0.0], "host: a tensor (2,) torch.float32 became a list"),
        ([1, 2], (1, 2), "host: a list became a tuple"),
        (Host(torch.zeros(1), [1.0, 2.0, 3.0]), Host(torch.zeros(1), [1.0, 2.0, 0.5]), "host.rows[2]: 3.0 became 0.5"),
        (Host(torch.zeros(1), [1.0]), Host(torch.zeros(1), [1.0, 2.0]), "host.rows: 1 items became 2"),
        (Pair(1, [2]), Pair(1, [3]), "host.right[0]: 2 became 3"),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, "host: keys ['a', 'b'] became ['b', 'a']"),
        ({"a": [1]}, {"a": [2]}, "host['a'][0]: 1 became 2"),
        (Plain(x=1, y=2), Plain(x=1, y=3), "host.y: 2 became 3"),
        (Plain(x=1, y=2), Plain(x=1), "host.y: missing"),
        (Plain(x=1), Plain(x=1, z=2), "host: attributes ['z'] appeared"),
        ("a", "b", "host: 'a' became 'b'"),
        ([0.0], torch.zeros(1), "host: a list became a tensor (1,) torch.float32"),
        (float("nan"), 1.0, "host: nan became 1.0"),
        (1.0, float("nan"), "host: 1.0 became nan"),
        # An object that merely has a _fields attribute is not a named tuple.
        (Plain(_fields=("x",), x=1), Plain(_fields=("x",), x=2), "host.x: 1 became 2"),
    ],
)
def test_a_difference_names_its_path_and_what_differs(before, after, said):
    assert difference(before, after) == said


def test_equal_structures_have_no_difference_nan_and_cycles_included():
    nan = float("nan")
    assert difference(Host(torch.tensor([nan]), [nan, 1.0]), Host(torch.tensor([nan]), [nan, 1.0])) is None
    loop_a, loop_b = Plain(), Plain()
    loop_a.me, loop_b.me = loop_a, loop_b
    assert difference(loop_a, loop_b) is None
    # Cycles through lists and dicts too, however deep they are entered.
    list_a, list_b = [1.0], [1.0]
    list_a.append([list_a]), list_b.append([list_b])
    dict_a, dict_b = {"x": 1}, {"x": 1}
    dict_a["inner"], dict_b["inner"] = {"back": dict_a}, {"back": dict_b}
    assert difference(list_a, list_b) is None and difference(dict_a, dict_b) is None
    assert difference({"k": Pair(torch.zeros(1), None)}, {"k": Pair(torch.zeros(1), None)}) is None
